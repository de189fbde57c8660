import java.util.Arrays;
import org.vkformer.GenerateOptions;
import org.vkformer.GenerateResult;
import org.vkformer.Model;
import org.vkformer.Session;
import org.vkformer.TokenLogprobs;
import org.vkformer.VkformerException;

/**
 * Log-probabilities through the Java binding (GenerateOptions.logprobs and topLogprobs,
 * GenerateResult.logprobs): one per generated id, the greedy id the most likely, the top list
 * sorted, and the raw model's numbers whatever the sampler does with them.
 */
final class LogprobsChecks {
    private LogprobsChecks() {}

    static void check(Model model, int[] prompt) {
        try (Session session = new Session(model, 128)) {
            GenerateResult off = session.generate(prompt, VkformerTest.options(4), null, null);
            VkformerTest.check(off.logprobs == null, "no logprobs unless asked for");

            GenerateOptions greedy = VkformerTest.options(6);
            greedy.logprobs = true;
            greedy.topLogprobs = 5;
            session.reset();
            GenerateResult g = session.generate(prompt, greedy, null, null);
            VkformerTest.check(g.logprobs != null && g.logprobs.length == g.tokens.length, "one logprobs per id");
            VkformerTest.check(Arrays.equals(g.tokens, Arrays.copyOf(off.tokens, 6)) || off.tokens.length < 6,
                               "asking for logprobs leaves the greedy ids");
            for (int i = 0; g.logprobs != null && i < g.logprobs.length; i++) {
                TokenLogprobs lp = g.logprobs[i];
                VkformerTest.check(lp.token == g.tokens[i] && lp.logprob <= 0, "token " + i + ": its id and logprob "
                                                                                 + lp.logprob);
                VkformerTest.check(lp.topTokens.length == 5 && lp.topLogprobs.length == 5, "token " + i + ": 5 top");
                VkformerTest.check(lp.topTokens[0] == lp.token && lp.topLogprobs[0] == lp.logprob,
                                   "token " + i + ": the greedy id is the most likely");
                double mass = 0;
                for (int k = 0; k < 5; k++) {
                    mass += Math.exp(lp.topLogprobs[k]);
                    VkformerTest.check(k == 0 || lp.topLogprobs[k] <= lp.topLogprobs[k - 1], "token " + i + ": sorted");
                }
                VkformerTest.check(mass <= 1 + 1e-9, "token " + i + ": top probabilities sum to " + mass);
            }
            System.out.println("logprobs of the first token: " + Arrays.toString(g.logprobs[0].topTokens) + " "
                               + Arrays.toString(g.logprobs[0].topLogprobs));

            // Sampled at temperature 1.5: the first position's numbers are the greedy run's (the
            // model's, before temperature), and each chosen id's own logprob is reported.
            GenerateOptions sampled = VkformerTest.options(6);
            sampled.temperature = 1.5f;
            sampled.seed = 7;
            sampled.logprobs = true;
            sampled.topLogprobs = 5;
            session.reset();
            GenerateResult s = session.generate(prompt, sampled, null, null);
            TokenLogprobs first = s.logprobs[0];
            VkformerTest.check(Arrays.equals(first.topTokens, g.logprobs[0].topTokens)
                                   && Arrays.equals(first.topLogprobs, g.logprobs[0].topLogprobs),
                               "logprobs before temperature: the greedy run's at the first position");
            boolean chosenOk = true;
            for (int i = 0; i < s.logprobs.length; i++) {
                chosenOk &= s.logprobs[i].token == s.tokens[i] && s.logprobs[i].logprob <= s.logprobs[i].topLogprobs[0];
            }
            VkformerTest.check(chosenOk && s.logprobs.length == s.tokens.length, "sampled ids carry their logprobs");

            GenerateOptions chosenOnly = VkformerTest.options(2);
            chosenOnly.logprobs = true;
            session.reset();
            GenerateResult c = session.generate(prompt, chosenOnly, null, null);
            VkformerTest.check(c.logprobs.length == 2 && c.logprobs[0].topTokens.length == 0
                                   && c.logprobs[0].logprob == g.logprobs[0].logprob,
                               "topLogprobs 0: the chosen token's only");

            GenerateOptions withoutLogprobs = VkformerTest.options(2);
            withoutLogprobs.topLogprobs = 3;
            VkformerTest.expectError("topLogprobs without logprobs", VkformerException.INVALID_ARGUMENT,
                                     "topLogprobs is 3 with logprobs false",
                                     () -> session.generate(prompt, withoutLogprobs, null, null));
            GenerateOptions overVocab = VkformerTest.options(2);
            overVocab.logprobs = true;
            overVocab.topLogprobs = model.vocabSize() + 1;
            VkformerTest.expectError("topLogprobs over the vocabulary", VkformerException.INVALID_ARGUMENT,
                                     "over the model's vocabulary size",
                                     () -> session.generate(prompt, overVocab, null, null));
            GenerateOptions negative = VkformerTest.options(2);
            negative.logprobs = true;
            negative.topLogprobs = -1;
            VkformerTest.expectError("negative topLogprobs", VkformerException.INVALID_ARGUMENT, "topLogprobs of -1",
                                     () -> session.generate(prompt, negative, null, null));
        }
    }
}
