// Encodes texts with Hugging Face's tokenizers.js for hf_tokenizers_test.py. Reads a job from
// stdin: {"package": "<path to tokenizers.mjs>", "tokenizers": ["<tokenizer.json>", ...],
// "texts": ["...", ...]}; prints {"<tokenizer.json>": [ids of each text, or "error: ..."], ...}.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(0, "utf8"));
const { Tokenizer } = await import(pathToFileURL(job.package).href);
const results = {};
for (const path of job.tokenizers) {
  const tokenizer = new Tokenizer(JSON.parse(readFileSync(path, "utf8")), {});
  results[path] = job.texts.map((text) => {
    try {
      return tokenizer.encode(text).ids;
    } catch (error) {
      return "error: " + error.message;
    }
  });
}
process.stdout.write(JSON.stringify(results));
