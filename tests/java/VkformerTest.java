import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.vkformer.Context;
import org.vkformer.Encoder;
import org.vkformer.GenerateOptions;
import org.vkformer.GenerateResult;
import org.vkformer.KvFormat;
import org.vkformer.Model;
import org.vkformer.Session;
import org.vkformer.StopReason;
import org.vkformer.Tokenizer;
import org.vkformer.Vkformer;
import org.vkformer.VkformerException;

/**
 * The Java binding against models/kjv-bloom on the host's device (lavapipe in CI): streamed
 * text against the generated ids, stopping from the callback, an exception from the callback,
 * cancellation from another thread, and misuse (closed handles, a wrong path, a model too big
 * for a forced memory budget, a negative size) answered with exceptions.
 * usage: java -Xcheck:jni -Dorg.vkformer.library=libvkformer_jni.so -cp ... VkformerTest MODEL_DIR
 *        ... VkformerTest --encoder ENCODER_DIR   (an encoder's embeddings through the binding)
 *        ... VkformerTest --gguf FILE.gguf DIR [EMBEDDED OFFSET LENGTH]   (GgufChecks)
 */
public final class VkformerTest {
    private static int checks;
    private static final List<String> failures = new ArrayList<>();

    static void check(boolean ok, String what) {
        checks++;
        if (!ok) {
            failures.add(what);
            System.out.println("FAILED: " + what);
        }
    }

    interface Call {
        void run() throws Exception;
    }

    /** The call must throw VkformerException with this status and a message naming `text`. */
    static void expectError(String what, int status, String text, Call call) {
        try {
            call.run();
            check(false, what + ": no exception");
        } catch (VkformerException e) {
            System.out.println(what + ": " + e.getMessage());
            check(e.status() == status, what + ": status " + e.statusName() + ", expected " + status);
            check(e.getMessage().contains(text), what + ": message without '" + text + "': " + e.getMessage());
        } catch (Exception e) {
            check(false, what + ": " + e);
        }
    }

    static GenerateOptions options(int maxNewTokens) {
        GenerateOptions o = new GenerateOptions().maxNewTokens(maxNewTokens);
        o.useModelEos = false; // a fixed count whatever the model says
        return o;
    }

    /**
     * Native.generate reads every field of the GenerateOptions object and builds the
     * GenerateResult: a value of each checked field out of range is refused naming it, the
     * sampling fields change the tokens, and one seed gives the same tokens again.
     */
    private static void checkOptionsReachTheLibrary(Session session, String prompt, Tokenizer tokenizer,
                                                    int[] greedy) {
        GenerateOptions badTopP = options(2);
        badTopP.topP = 2f;
        expectError("top_p over 1", VkformerException.INVALID_ARGUMENT, "top_p must be in (0, 1]",
                    () -> session.generate(prompt, badTopP, null, tokenizer));
        GenerateOptions badTemperature = options(2);
        badTemperature.temperature = -1f;
        expectError("negative temperature", VkformerException.INVALID_ARGUMENT, "temperature must be finite",
                    () -> session.generate(prompt, badTemperature, null, tokenizer));
        GenerateOptions badTopK = options(2);
        badTopK.topK = -1;
        expectError("negative topK", VkformerException.INVALID_ARGUMENT, "topK of -1",
                    () -> session.generate(prompt, badTopK, null, tokenizer));
        GenerateOptions badLength = options(2);
        badLength.maxNewTokens = 0;
        expectError("no new tokens", VkformerException.INVALID_ARGUMENT, "max_new_tokens is 0",
                    () -> session.generate(prompt, badLength, null, tokenizer));
        // A stop id of the greedy text's third token: it is kept, and generation ends there.
        GenerateOptions stopAt = options(24);
        stopAt.stopIds = new int[] {greedy[2]};
        session.reset();
        GenerateResult stopped = session.generate(prompt, stopAt, null, tokenizer);
        int first = 0;
        while (greedy[first] != greedy[2]) {
            first++;
        }
        check(stopped.stop == StopReason.EOS && stopped.tokens.length == first + 1,
              "stop id ends at its first token: " + stopped.stop + " " + stopped.tokens.length);
        // Sampling: one seed gives its tokens again; some seed leaves the greedy text.
        GenerateOptions sampled = options(12);
        sampled.temperature = 1.5f;
        sampled.topK = 50;
        sampled.topP = 0.95f;
        boolean differs = false;
        for (long seed = 1; seed <= 4; seed++) {
            sampled.seed = seed;
            session.reset();
            GenerateResult a = session.generate(prompt, sampled, null, tokenizer);
            session.reset();
            GenerateResult b = session.generate(prompt, sampled, null, tokenizer);
            check(Arrays.equals(a.tokens, b.tokens) && a.tokens.length == 12, "seed " + seed + " repeats");
            check(a.promptTokens > 0 && a.prefillSeconds >= 0 && a.decodeSeconds > 0, "timings of seed " + seed);
            differs |= !Arrays.equals(a.tokens, Arrays.copyOf(greedy, 12));
        }
        check(differs, "sampling at temperature 1.5 leaves the greedy tokens for some seed");
        session.reset();
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("--state")) {
            StateChecks.checkState(args[1], args[2]);
            finish();
        }
        if (args[0].equals("--state-continue")) {
            StateChecks.continueState(args[1], args[2], Integer.parseInt(args[3]));
            finish();
        }
        if (args[0].equals("--encoder")) {
            try (Context ctx = new Context()) {
                checkEncoder(ctx, args[1]);
            }
            finish();
        }
        if (args[0].equals("--gguf")) { // FILE DIR [EMBEDDED OFFSET LENGTH]
            try (Context ctx = new Context()) {
                boolean embedded = args.length >= 6;
                GgufChecks.check(ctx, args[1], args[2], embedded ? args[3] : null,
                                 embedded ? Long.parseLong(args[4]) : 0, embedded ? Long.parseLong(args[5]) : 0);
            }
            finish();
        }
        final String dir = args[0];
        final String prompt = "In the beginning God created";
        check(!Vkformer.version().isEmpty() && Vkformer.abiVersion() >= 1, "version " + Vkformer.version());

        Context ctx = new Context();
        Tokenizer tokenizer = new Tokenizer(dir);
        Model model = new Model(ctx, dir);
        System.out.println("device " + ctx.deviceName() + ", model " + model.family() + ", vocab " + model.vocabSize());
        check(model.family().equals("bloom") && model.vocabSize() == tokenizer.vocabSize(), "model info");

        String text = "And God said, Let there be light: and there was light.";
        check(tokenizer.decode(tokenizer.encode(text, false), true).equals(text), "tokenizer round trip");

        // Streaming: the pieces put together are the text of the ids, one call per id.
        Session session = new Session(model, 128);
        StringBuilder streamed = new StringBuilder();
        int[] calls = {0};
        GenerateResult r = session.generate(prompt, options(24), (token, piece) -> {
            if (token != -1) {
                calls[0]++;
            }
            streamed.append(piece);
            return true;
        }, tokenizer);
        System.out.println("streamed: " + prompt + "|" + streamed);
        check(r.tokens.length == 24 && calls[0] == 24 && r.stop == StopReason.LENGTH, "24 tokens streamed");
        check(streamed.toString().equals(tokenizer.decode(r.tokens, false)), "streamed text is the ids' text");
        check(!streamed.toString().isBlank(), "some text");
        check(session.position() == r.promptTokens + 24 - 1 || session.position() == r.promptTokens + 24,
              "position " + session.position());
        // Greedy decoding again from the start: the same ids, now from the prompt's ids.
        session.reset();
        GenerateResult again = session.generate(tokenizer.encode(prompt, true), options(24), null, null);
        check(java.util.Arrays.equals(again.tokens, r.tokens), "greedy generation is repeatable");
        // An 8-bit K/V cache (KvFormat): the same greedy tokens on the shipped model.
        try (Session quantized = new Session(model, 128, 0, KvFormat.Q8_0, KvFormat.Q8_0)) {
            GenerateResult q = quantized.generate(tokenizer.encode(prompt, true), options(24), null, null);
            check(java.util.Arrays.equals(q.tokens, r.tokens), "q8_0 K/V: the same greedy tokens");
        }

        // The whole sampler chain: the same seed, the same ids; a bias ban moves greedy's first token.
        GenerateOptions chain = options(8);
        chain.temperature = 0.8f;
        chain.topK = 40;
        chain.typicalP = 0.95f;
        chain.topP = 0.9f;
        chain.minP = 0.02f;
        chain.repetitionPenalty = 1.15f;
        chain.presencePenalty = 0.3f;
        chain.frequencyPenalty = 0.2f;
        chain.penaltyLastN = 32;
        chain.seed = 4242;
        session.reset();
        int[] sampled = session.generate(prompt, chain, null, tokenizer).tokens;
        session.reset();
        check(java.util.Arrays.equals(session.generate(prompt, chain, null, tokenizer).tokens, sampled),
              "the sampler chain repeats itself for a seed");
        GenerateOptions banned = options(2);
        banned.logitBiasIds = new int[] {r.tokens[0]};
        banned.logitBiasValues = new float[] {-100f};
        session.reset();
        check(session.generate(prompt, banned, null, tokenizer).tokens[0] != r.tokens[0], "logit bias -100 bans");
        banned.logitBiasValues = new float[0];
        session.reset();
        expectError("logit bias lengths", VkformerException.INVALID_ARGUMENT, "same length",
                    () -> session.generate(prompt, banned, null, tokenizer));

        // From the token callback, generate and reset on the same session are refused, and the
        // generation under way gives the tokens it gives without them; position() is allowed.
        // Before: the busy lock was reentrant, and the inner calls ran inside the outer one.
        final Session same = session;
        session.reset();
        List<Throwable> refused = new ArrayList<>();
        int[] tokenCount = {0, -1};
        GenerateResult outer = session.generate(prompt, options(24), (token, piece) -> {
            if (++tokenCount[0] == 3) {
                try {
                    same.generate(prompt, options(2), null, tokenizer);
                } catch (IllegalStateException e) {
                    refused.add(e);
                }
                try {
                    same.reset();
                } catch (IllegalStateException e) {
                    refused.add(e);
                }
                tokenCount[1] = same.position();
            }
            return true;
        }, tokenizer);
        check(refused.size() == 2 && refused.get(0).getMessage().contains("own token callback"),
              "generate and reset from the callback refused: " + refused);
        check(Arrays.equals(outer.tokens, r.tokens), "the generation is undisturbed by them");
        check(tokenCount[1] > 0, "position() from the callback: " + tokenCount[1]);
        // Stop ids the model cannot produce are refused, naming the id and the vocabulary.
        GenerateOptions badStop = options(2);
        badStop.stopIds = new int[] {2, model.vocabSize()};
        expectError("stop id outside the vocabulary", VkformerException.INVALID_ARGUMENT,
                    "is " + model.vocabSize() + ", not below the model's vocabulary size " + model.vocabSize(),
                    () -> same.generate(prompt, badStop, null, tokenizer));
        checkOptionsReachTheLibrary(same, prompt, tokenizer, r.tokens);
        PrefixCacheChecks.check(model, tokenizer);
        LogprobsChecks.check(model, tokenizer.encode(prompt, true));
        checkCloseFromCallback(model, dir, prompt);
        checkUnclosedFreed(dir);

        // The callback stops the generation.
        session.reset();
        r = session.generate(prompt, options(24), (token, piece) -> calls[0]++ < 24 + 2, tokenizer);
        check(r.stop == StopReason.CALLBACK && r.tokens.length == 3, "callback stop after 3: " + r.tokens.length);

        // An exception in the callback stops it and comes out of generate as it is.
        session.reset();
        RuntimeException boom = new IllegalStateException("boom");
        try {
            session.generate(prompt, options(24), (token, piece) -> {
                throw boom;
            }, tokenizer);
            check(false, "callback exception lost");
        } catch (IllegalStateException e) {
            check(e == boom, "callback exception passed through");
        }

        // Cancellation from another thread while the generating thread waits inside the callback:
        // cancel() is surely called mid-generation, and the generation stops at the next token.
        session.reset();
        CountDownLatch fifth = new CountDownLatch(1);
        CountDownLatch cancelled = new CountDownLatch(1);
        final Session s = session;
        Thread canceller = new Thread(() -> {
            try {
                fifth.await();
                s.cancel();
                cancelled.countDown();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        canceller.start();
        int[] seen = {0};
        r = session.generate(prompt, options(100), (token, piece) -> {
            if (++seen[0] == 5) {
                fifth.countDown();
                try {
                    check(cancelled.await(30, TimeUnit.SECONDS), "canceller ran");
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }
            return true;
        }, tokenizer);
        canceller.join();
        check(r.stop == StopReason.CANCELLED && r.tokens.length >= 5 && r.tokens.length <= 6,
              "cancelled after 5 tokens: " + r.stop + " " + r.tokens.length);
        // The flag is cleared for the next generation.
        session.reset();
        r = session.generate(prompt, options(4), null, tokenizer);
        check(r.stop == StopReason.LENGTH && r.tokens.length == 4, "generation after a cancel");

        // Another thread using the session while it generates is refused; another thread
        // closing it cancels the generation and waits for it to end.
        session.reset();
        Session closing = new Session(model, 128);
        Thread[] closer = {null};
        Throwable[] fromOther = {null};
        r = closing.generate(prompt, options(100), (token, piece) -> {
            if (closer[0] == null) {
                Thread user = new Thread(() -> {
                    try {
                        closing.position();
                    } catch (Throwable e) {
                        fromOther[0] = e;
                    }
                });
                user.start();
                joinQuietly(user);
                check(fromOther[0] instanceof IllegalStateException, "second thread refused: " + fromOther[0]);
                closer[0] = new Thread(closing::close);
                closer[0].start();
                // Parked on the handle's write lock: close() has requested the cancel by then.
                long deadline = System.nanoTime() + 30_000_000_000L;
                while (closer[0].getState() != Thread.State.WAITING && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
            }
            return true;
        }, tokenizer);
        joinQuietly(closer[0]);
        check(r.stop == StopReason.CANCELLED && r.tokens.length <= 2, "close from another thread: " + r.stop + " "
                                                                         + r.tokens.length);
        expectError("closed by another thread", VkformerException.INVALID_HANDLE, "closed", closing::position);

        // Misuse: exceptions, not crashes.
        expectError("wrong path", VkformerException.IO, "/nonexistent/kjv", () -> new Model(ctx, "/nonexistent/kjv"));
        expectError("wrong tokenizer path", VkformerException.IO, "/nonexistent", () -> new Tokenizer("/nonexistent"));
        expectError("negative size", 1, "maxTokens", () -> new Session(model, -1));
        try (Context small = new Context(limits("device_heap=1M,host_heap=1M"))) {
            Model.Options o = new Model.Options();
            o.maxTokens = 128;
            Model.MemoryEstimate e = Model.estimate(small, dir, o);
            check(!e.fits && e.total > e.available, "estimate: does not fit");
            expectError("model too big", VkformerException.OUT_OF_MEMORY, "", () -> new Model(small, dir, o));
        }
        // A context closed first: its model and sessions keep it alive.
        ctx.close();
        session.reset();
        r = session.generate(prompt, options(2), null, tokenizer);
        check(r.tokens.length == 2, "session after its context was closed");
        expectError("closed context", VkformerException.INVALID_HANDLE, "closed", () -> new Model(ctx, dir));
        session.close();
        session.close(); // twice: nothing
        expectError("closed session", VkformerException.INVALID_HANDLE, "closed",
                    () -> s.generate(prompt, options(2), null, tokenizer));
        s.cancel(); // after close: nothing
        tokenizer.close();
        expectError("closed tokenizer", VkformerException.INVALID_HANDLE, "closed", () -> tokenizer.encode("x", false));
        model.close();

        finish();
    }

    /**
     * close() from the session's own callback, and of the tokenizer that call holds: deferred to
     * generate's end (the session cancelled after this token). Before, close() waited for the
     * write lock its own thread's call held: for ever.
     */
    private static void checkCloseFromCallback(Model model, String dir, String prompt) throws InterruptedException {
        Session session = new Session(model, 128);
        Tokenizer tokenizer = new Tokenizer(dir);
        GenerateResult[] result = {null};
        Throwable[] error = {null};
        Thread worker = new Thread(() -> {
            try {
                result[0] = session.generate(prompt, options(24), (token, piece) -> {
                    session.close();
                    tokenizer.close();
                    return true;
                }, tokenizer);
            } catch (Throwable e) {
                error[0] = e;
            }
        });
        worker.setDaemon(true);
        worker.start();
        worker.join(30_000);
        check(!worker.isAlive(), "close() from the token callback returns");
        if (worker.isAlive()) {
            return;
        }
        check(error[0] == null && result[0] != null && result[0].stop == StopReason.CANCELLED
                  && result[0].tokens.length == 1,
              "closed from its callback: cancelled after that token: "
                  + (error[0] != null ? error[0] : result[0].stop + " " + result[0].tokens.length));
        expectError("session closed from its callback", VkformerException.INVALID_HANDLE, "closed", session::position);
        expectError("tokenizer closed from the callback", VkformerException.INVALID_HANDLE, "closed",
                    () -> tokenizer.encode("x", false));
    }

    /**
     * A model and sessions never closed are freed once unreachable (a Cleaner): the context's
     * memory comes back to what it was after the same were closed. Before, they stayed allocated.
     */
    private static void checkUnclosedFreed(String dir) throws InterruptedException {
        // A forced budget: the context counts what its buffers hold against it (without one,
        // lavapipe's first 64 MiB block hides sessions from memoryAvailable()).
        try (Context ctx = new Context(limits("device_heap=64M,host_heap=1"))) {
            makeHandles(ctx, dir).close(); // closed: what a model and sessions leave behind
            long before = ctx.memoryAvailable();
            long during = makeUnclosed(ctx, dir);
            long after = ctx.memoryAvailable();
            for (int i = 0; i < 500 && after < before; i++) {
                System.gc();
                Thread.sleep(20);
                after = ctx.memoryAvailable();
            }
            check(during < before && after >= before, "unclosed handles freed: " + before + " bytes available, "
                                                          + during + " with them, " + after + " after");
        }
    }

    private static Model makeHandles(Context ctx, String dir) {
        Model model = new Model(ctx, dir);
        for (int i = 0; i < 8; i++) {
            new Session(model, 1024).close();
        }
        return model;
    }

    private static long makeUnclosed(Context ctx, String dir) {
        Model model = new Model(ctx, dir);
        for (int i = 0; i < 8; i++) {
            new Session(model, 1024);
        }
        long available = ctx.memoryAvailable();
        Reference.reachabilityFence(model);
        return available;
    }

    private static void joinQuietly(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    static void finish() {
        System.out.println("java_binding: " + checks + " checks, " + failures.size() + " failed");
        System.exit(failures.isEmpty() ? 0 : 1);
    }

    /** A random tiny JinaBERT: the pooled embedding is the mean of the per-token ones, normalized. */
    private static void checkEncoder(Context ctx, String dir) {
        try (Encoder encoder = new Encoder(ctx, dir)) {
            int hidden = encoder.hiddenSize();
            int[] ids = {5, 17, 2, 40, 9};
            float[] rows = encoder.embed(ids, Encoder.POOLING_NONE, false);
            float[] mean = encoder.embed(ids, Encoder.POOLING_MEAN, true);
            check(rows.length == ids.length * hidden && mean.length == hidden, "embedding sizes");
            double[] expected = new double[hidden];
            double norm = 0;
            for (int j = 0; j < hidden; j++) {
                for (int i = 0; i < ids.length; i++) {
                    expected[j] += rows[i * hidden + j] / ids.length;
                }
                norm += expected[j] * expected[j];
            }
            double worst = 0;
            for (int j = 0; j < hidden; j++) {
                worst = Math.max(worst, Math.abs(expected[j] / Math.sqrt(norm) - mean[j]));
            }
            check(worst < 1e-4, "mean pooling of the rows: off by " + worst);
            expectError("empty input", 5, "", () -> encoder.embed(new int[0], Encoder.POOLING_MEAN, true));
        }
    }

    private static Context.Options limits(String limits) {
        Context.Options o = new Context.Options();
        o.limits = limits;
        return o;
    }
}
