package org.vkformer;

import java.nio.charset.StandardCharsets;

/** A Hugging Face tokenizer.json (vkf_tokenizer). Thread-safe. */
public final class Tokenizer extends NativeHandle {
    /** @param path a tokenizer.json, or a directory holding one */
    public Tokenizer(String path) {
        super("Tokenizer", Native.tokenizerLoad(Vkformer.utf8(path)), Native::tokenizerFree);
    }

    public int vocabSize() {
        long h = acquire();
        try {
            return Native.tokenizerVocabSize(h);
        } finally {
            release();
        }
    }

    /** The ids of text; addSpecial: BOS/EOS as the tokenizer's post-processor adds them. */
    public int[] encode(String text, boolean addSpecial) {
        long h = acquire();
        try {
            return Native.tokenize(h, text.getBytes(StandardCharsets.UTF_8), addSpecial);
        } finally {
            release();
        }
    }

    public String decode(int[] ids, boolean skipSpecial) {
        long h = acquire();
        try {
            return new String(Native.detokenize(h, ids, skipSpecial), StandardCharsets.UTF_8);
        } finally {
            release();
        }
    }
}
