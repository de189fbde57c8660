#!/usr/bin/env python3
"""The Java binding loading a llama.cpp GGUF by its path (issue 44): models/kjv-bloom converted with
llama.cpp's gguf-py (npm's node-llama-cpp, as tests/apps/gguf_run_test.py converts it), then
VkformerTest --gguf FILE DIR EMBEDDED OFFSET LENGTH: the tokenizer from tokenizer.ggml.* and the
greedy ids of the model loaded from the file equal the directory's, and so do those of the same
GGUF copied into EMBEDDED at OFFSET, after and before other bytes (as an APK holds an asset),
loaded from a FileDescriptor with OFFSET and LENGTH. Then a random tiny jina-bert-v2 (vkf-make-checkpoint,
converted as tests/apps/gguf_families_test.py does) through VkformerTest --encoder FILE.gguf: the
Encoder (vkf_encoder_load) takes the file's path.

usage: gguf_java_test.py MODEL_DIR NPM_DIR VKF_MAKE_CHECKPOINT BERT_TOKENIZER_JSON JAVA ARGS...
(JAVA ARGS: the java command line before the test's own)
Exit 77 (skipped) when node, npm, git or numpy is missing or npm cannot install the package.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps"))
import gguf_compare  # noqa: E402  (gguf-py's installation)
import gguf_families_test  # noqa: E402  (conversion/bert.py's layout)
import gguf_run_test  # noqa: E402  (conversion/bloom.py's layout)


def write_embedded(gguf_path, embedded):
    """Copies the GGUF into `embedded` after 4099 bytes that are not a GGUF (an offset no page or
    GGUF alignment divides) and before 1000 more; returns the offset."""
    before = bytes((i * 37 + 11) % 251 for i in range(4099))
    with open(embedded, "wb") as out, open(gguf_path, "rb") as src:
        out.write(before)
        shutil.copyfileobj(src, out)
        out.write(b"\xff" * 1000)
    return len(before)


def main():
    if len(sys.argv) < 6:
        print(__doc__)
        return 2
    model_dir, npm_dir, make, bert_tokenizer = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3], sys.argv[4]
    java = sys.argv[5:]
    gguf, np = gguf_compare.gguf_modules(npm_dir)

    with tempfile.TemporaryDirectory(prefix="vkf_gguf_java_") as tmp:
        path = os.path.join(tmp, "kjv-bloom.gguf")
        gguf_run_test.convert(gguf, np, model_dir, path)
        embedded = os.path.join(tmp, "asset-pack.bin")
        offset = write_embedded(path, embedded)
        decoder = subprocess.run(java + ["--gguf", path, model_dir, embedded, str(offset),
                                         str(os.path.getsize(path))]).returncode
        encoder_dir = os.path.join(tmp, "jina-bert")
        made = subprocess.run([make, "--out", encoder_dir, "--family", "jina-bert", "--preset", "tiny", "--dtype",
                               "f32", "--vocab", "59"], capture_output=True, text=True)
        if made.returncode != 0:
            print("vkf-make-checkpoint --family jina-bert: exit %d: %s" % (made.returncode, made.stderr))
            return 1
        shutil.copy(bert_tokenizer, os.path.join(encoder_dir, "tokenizer.json"))
        with open(os.path.join(encoder_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizer_class": "BertTokenizer", "cls_token": "[CLS]", "sep_token": "[SEP]",
                       "unk_token": "[UNK]"}, f)
        encoder = encoder_dir + ".gguf"
        gguf_families_test.convert(gguf, np, encoder_dir, encoder, "f32")
        return decoder or subprocess.run(java + ["--encoder", encoder]).returncode


if __name__ == "__main__":
    sys.exit(main())
