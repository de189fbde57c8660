import java.util.Arrays;
import org.vkformer.GenerateResult;
import org.vkformer.Model;
import org.vkformer.Session;
import org.vkformer.Tokenizer;

/**
 * The prefix cache through the Java binding (Session.Options.prefixCache, GenerateResult.cachedTokens):
 * after reset(), a prompt that starts with the last sequence's tokens takes their whole 16-token
 * KV blocks instead of computing them, with the greedy ids of a session without the cache.
 */
final class PrefixCacheChecks {
    private PrefixCacheChecks() {}

    private static final String PREAMBLE =
        "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
        + "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters.";

    static void check(Model model, Tokenizer tokenizer) {
        int[] first = tokenizer.encode(PREAMBLE + " And God said, Let there be light", true);
        int[] second = tokenizer.encode(PREAMBLE + " And God saw the light, that it was good", true);
        int shared = 0;
        while (shared < Math.min(first.length, second.length) && first[shared] == second[shared]) {
            shared++;
        }
        VkformerTest.check(shared >= 32 && shared < second.length, "the prompts share " + shared + " tokens");
        int[] expected;
        try (Session plain = new Session(model, new Session.Options().maxTokens(128))) {
            plain.generate(first, VkformerTest.options(8), null, null);
            plain.reset();
            GenerateResult r = plain.generate(second, VkformerTest.options(8), null, null);
            VkformerTest.check(r.cachedTokens == 0, "without prefixCache nothing is cached: " + r.cachedTokens);
            expected = r.tokens;
        }
        try (Session cached = new Session(model, new Session.Options().maxTokens(128).prefixCache(true))) {
            GenerateResult a = cached.generate(first, VkformerTest.options(8), null, null);
            VkformerTest.check(a.cachedTokens == 0, "the first prompt finds nothing cached: " + a.cachedTokens);
            cached.reset();
            GenerateResult b = cached.generate(second, VkformerTest.options(8), null, null);
            System.out.println("prefix cache: " + b.cachedTokens + " of " + b.promptTokens + " prompt tokens cached, "
                               + shared + " shared");
            VkformerTest.check(b.promptTokens == second.length && b.cachedTokens == shared / 16 * 16,
                               "the shared whole blocks are cached: " + b.cachedTokens + " of " + shared);
            VkformerTest.check(Arrays.equals(b.tokens, expected), "cached prefix: the uncached greedy ids "
                                                                      + Arrays.toString(b.tokens) + " vs "
                                                                      + Arrays.toString(expected));
            // A generation continuing the sequence takes nothing from the cache.
            GenerateResult c = cached.generate(new int[] {b.tokens[b.tokens.length - 1]}, VkformerTest.options(2),
                                               null, null);
            VkformerTest.check(c.cachedTokens == 0, "a continuation reports no cached tokens: " + c.cachedTokens);
        }
    }
}
