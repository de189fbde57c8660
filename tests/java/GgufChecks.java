import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.util.Arrays;
import org.vkformer.Context;
import org.vkformer.Model;
import org.vkformer.Session;
import org.vkformer.Tokenizer;
import org.vkformer.VkformerException;

/**
 * llama.cpp GGUF files through the Java binding (VkformerTest --gguf, run by gguf_java_test.py):
 * by their path, and from an open descriptor with an offset and length, as Android gives an asset
 * stored in an APK (issue 44).
 */
final class GgufChecks {
    private GgufChecks() {}

    private static final String TEXT = "And God said, Let there be light: and there was light.";

    /**
     * The GGUF of the model in dir loaded by its path: the tokenizer from tokenizer.ggml.* and the
     * greedy ids are the directory's. Then the same GGUF held at [offset, offset + length) of
     * `embedded` (other bytes before and after it) loaded from the descriptor: the path's greedy
     * ids again; a bad descriptor or range is refused naming it.
     */
    static void check(Context ctx, String gguf, String dir, String embedded, long offset, long length)
        throws Exception {
        int[] ids;
        int[] fromPath;
        try (Model fromFile = new Model(ctx, gguf); Model fromDir = new Model(ctx, dir);
             Tokenizer fileTokens = new Tokenizer(gguf); Tokenizer dirTokens = new Tokenizer(dir)) {
            VkformerTest.check(fromFile.family().equals("bloom") && fromFile.vocabSize() == fromDir.vocabSize(),
                               "GGUF model info: " + fromFile.family() + ", vocab " + fromFile.vocabSize());
            ids = fileTokens.encode(TEXT, true);
            VkformerTest.check(Arrays.equals(ids, dirTokens.encode(TEXT, true)), "GGUF tokenizer: the directory's ids");
            fromPath = greedy(fromFile, ids);
            int[] fromDirectory = greedy(fromDir, ids);
            System.out.println("GGUF greedy ids " + Arrays.toString(fromPath));
            VkformerTest.check(fromPath.length == 12 && Arrays.equals(fromPath, fromDirectory),
                               "GGUF greedy ids are the directory's");
        }
        if (embedded != null) {
            checkDescriptor(ctx, embedded, offset, length, ids, fromPath);
        }
    }

    private static int[] greedy(Model model, int[] ids) {
        try (Session session = new Session(model, 64)) {
            return session.generate(ids, VkformerTest.options(12), null, null).tokens;
        }
    }

    private static void checkDescriptor(Context ctx, String embedded, long offset, long length, int[] ids,
                                        int[] fromPath) throws Exception {
        Model fromFd;
        try (FileInputStream in = new FileInputStream(embedded)) {
            fromFd = new Model(ctx, in.getFD(), offset, length);
        } // closed: the model holds a duplicate of the descriptor
        try (Model model = fromFd) {
            VkformerTest.check(model.family().equals("bloom"), "descriptor model info: " + model.family());
            int[] generated = greedy(model, ids);
            System.out.println("descriptor greedy ids " + Arrays.toString(generated));
            VkformerTest.check(Arrays.equals(generated, fromPath), "descriptor greedy ids are the path's");
        }
        try (FileInputStream in = new FileInputStream(embedded)) {
            FileDescriptor fd = in.getFD();
            long size = in.getChannel().size();
            VkformerTest.expectError("range past the end", VkformerException.IO,
                                     "the file has only " + size + " bytes",
                                     () -> new Model(ctx, fd, offset, size - offset + 1).close());
            VkformerTest.expectError("negative offset", VkformerException.INVALID_ARGUMENT,
                                     "offset of -1: must not be negative",
                                     () -> new Model(ctx, fd, -1, length).close());
            VkformerTest.expectError("negative length", VkformerException.INVALID_ARGUMENT,
                                     "length of -5: must not be negative",
                                     () -> new Model(ctx, fd, offset, -5).close());
            // The bytes before the GGUF are not one: the offset is what finds it.
            VkformerTest.expectError("the file's start", 5, "not a GGUF file",
                                     () -> new Model(ctx, fd, 0, length).close());
        }
        FileInputStream closed = new FileInputStream(embedded);
        FileDescriptor closedFd = closed.getFD();
        closed.close();
        VkformerTest.expectError("closed descriptor", VkformerException.IO, "not open",
                                 () -> new Model(ctx, closedFd, offset, length).close());
        VkformerTest.expectError("unopened descriptor", VkformerException.IO, "not open",
                                 () -> new Model(ctx, new FileDescriptor(), offset, length).close());
        VkformerTest.expectError("null descriptor", VkformerException.INVALID_ARGUMENT, "fd is null",
                                 () -> new Model(ctx, null, offset, length).close());
    }
}
