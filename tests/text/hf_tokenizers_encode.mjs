// Encodes texts for hf_tokenizers_test.py with one of Hugging Face's JavaScript packages and
// prints the results. Reads a job from stdin:
//   {"implementation": "tokenizers.js" | "tokenizers", "module": "<path>",
//    "tokenizers": ["<tokenizer.json>", ...], "texts": ["...", ...]}
// "tokenizers.js" is @huggingface/tokenizers (pure JavaScript; module: its tokenizers.mjs);
// "tokenizers" is the Node binding of Hugging Face's Rust library (module: its package folder).
// Prints {"<tokenizer.json>": [{"ids": [...], "text": "...", "text_skip": "..."} or
// "error: ..." for each text], ...}; the decoded texts only for "tokenizers".
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(0, "utf8"));
const rust = job.implementation === "tokenizers";
const { Tokenizer } = rust
  ? createRequire(import.meta.url)(job.module)
  : await import(pathToFileURL(job.module).href);

async function encode(tokenizer, text) {
  if (!rust) {
    return { ids: tokenizer.encode(text).ids };
  }
  const ids = (await tokenizer.encode(text)).getIds();
  return { ids, text: await tokenizer.decode(ids, false), text_skip: await tokenizer.decode(ids, true) };
}

const results = {};
for (const path of job.tokenizers) {
  const tokenizer = rust
    ? Tokenizer.fromFile(path)
    : new Tokenizer(JSON.parse(readFileSync(path, "utf8")), {});
  results[path] = [];
  for (const text of job.texts) {
    try {
      results[path].push(await encode(tokenizer, text));
    } catch (error) {
      results[path].push("error: " + error.message);
    }
  }
}
process.stdout.write(JSON.stringify(results));
