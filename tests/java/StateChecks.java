import java.util.Arrays;
import org.vkformer.Context;
import org.vkformer.KvFormat;
import org.vkformer.Model;
import org.vkformer.Session;

/**
 * Sequence state through the Java binding (VkformerTest --state and --state-continue): saved
 * mid-generation, loaded in a fresh JVM and in a fresh session, refusals leaving the session as
 * it was.
 */
final class StateChecks {
    private StateChecks() {}

    private static final int[] STATE_PROMPT = {17, 250, 3001, 42, 977, 1200, 5, 64, 2048, 333, 91};
    private static final int STATE_FIRST = 8;
    private static final int STATE_TOTAL = 20;

    /**
     * Session.saveState mid-generation: a fresh JVM loading the file, and a fresh session here
     * loading the bytes (q8_0 KV too), continue with the uninterrupted run's greedy ids; a
     * truncated, corrupted or newer state is refused and the session goes on as before.
     */
    static void checkState(String dir, String work) throws Exception {
        try (Context ctx = new Context(); Model model = new Model(ctx, dir)) {
            for (KvFormat kv : new KvFormat[] {KvFormat.F16, KvFormat.Q8_0}) {
                int[] whole;
                try (Session uninterrupted = new Session(model, 64, 0, kv, kv)) {
                    whole = uninterrupted.generate(STATE_PROMPT, VkformerTest.options(STATE_TOTAL), null, null).tokens;
                }
                int[] rest = Arrays.copyOfRange(whole, STATE_FIRST, STATE_TOTAL);
                try (Session saver = new Session(model, 64, 0, kv, kv)) {
                    int[] first = saver.generate(STATE_PROMPT, VkformerTest.options(STATE_FIRST), null, null).tokens;
                    VkformerTest.check(Arrays.equals(first, Arrays.copyOf(whole, STATE_FIRST)), kv + ": the first tokens");
                    int last = first[STATE_FIRST - 1];
                    byte[] state = saver.saveState();
                    try (Session loader = new Session(model, 64, 0, kv, kv)) {
                        loader.loadState(state);
                        VkformerTest.check(loader.position() == saver.position(), kv + ": the loaded position");
                        int[] loaded = loader.generate(new int[] {last}, VkformerTest.options(STATE_TOTAL - STATE_FIRST), null,
                                                       null).tokens;
                        VkformerTest.check(Arrays.equals(loaded, rest), kv + ": loaded continues as uninterrupted: "
                                                               + Arrays.toString(loaded) + " vs " + Arrays.toString(rest));
                    }
                    if (kv != KvFormat.F16) {
                        continue;
                    }
                    String file = work + "/java_state.bin";
                    saver.saveState(file);
                    checkFreshProcess(dir, file, last, rest);
                    byte[] truncated = Arrays.copyOf(state, state.length - 1);
                    VkformerTest.expectError("truncated state", 5, "truncated", () -> saver.loadState(truncated));
                    byte[] corrupted = state.clone();
                    corrupted[corrupted.length / 2] ^= 0x10;
                    VkformerTest.expectError("corrupted state", 5, "CRC-32", () -> saver.loadState(corrupted));
                    byte[] newer = state.clone();
                    newer[8] = 2;
                    VkformerTest.expectError("newer state", 5, "newer", () -> saver.loadState(newer));
                    try (Session quantized = new Session(model, 64, 0, KvFormat.Q8_0, KvFormat.Q8_0)) {
                        VkformerTest.expectError("state of another KV format", 5, "K quantization",
                                    () -> quantized.loadState(state));
                    }
                    int[] after = saver.generate(new int[] {last}, VkformerTest.options(STATE_TOTAL - STATE_FIRST), null, null)
                                      .tokens;
                    VkformerTest.check(Arrays.equals(after, rest), "the session goes on after the refusals");
                }
            }
        }
    }

    /** A fresh JVM (--state-continue) loads the file and prints the ids that follow. */
    private static void checkFreshProcess(String dir, String file, int last, int[] rest) throws Exception {
        String javaBin = System.getProperty("java.home") + "/bin/java";
        ProcessBuilder pb = new ProcessBuilder(javaBin, "-Xcheck:jni",
                                               "-Dorg.vkformer.library=" + System.getProperty("org.vkformer.library"),
                                               "-cp", System.getProperty("java.class.path"), "VkformerTest",
                                               "--state-continue", dir, file, Integer.toString(last));
        pb.redirectErrorStream(true);
        Process child = pb.start();
        String out = new String(child.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        int status = child.waitFor();
        System.out.print(out.replace("java_binding:", "fresh process:"));
        VkformerTest.check(status == 0, "the fresh process's status " + status);
        String expected = "ids " + Arrays.toString(rest);
        VkformerTest.check(out.contains(expected), "the fresh process continues as uninterrupted: " + expected);
    }

    static void continueState(String dir, String file, int last) {
        try (Context ctx = new Context(); Model model = new Model(ctx, dir); Session session = new Session(model, 64)) {
            session.loadState(file);
            int[] ids = session.generate(new int[] {last}, VkformerTest.options(STATE_TOTAL - STATE_FIRST), null, null).tokens;
            System.out.println("ids " + Arrays.toString(ids));
        }
    }
}
