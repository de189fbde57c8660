// The official OpenAI Node SDK (npm "openai") against a running vkf-server: completions, chat
// (whole and streamed), embeddings (the SDK asks for base64 by default and decodes it), the
// model list, and an error object raised as the SDK's own error class.
// usage: node server_sdk_test.mjs OPENAI_ENTRY BASE_URL CASE_JSON   (exit 1 on any failure)
const [entry, baseURL, caseJson] = process.argv.slice(2);
const { default: OpenAI } = await import(entry);
const c = JSON.parse(caseJson);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
let failures = 0;
const fail = (message) => {
  failures++;
  console.log("FAIL: " + message);
};
const expectEqual = (what, got, want) => {
  if (JSON.stringify(got) !== JSON.stringify(want)) fail(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
};

const models = await client.models.list();
expectEqual("models", models.data.map((m) => m.id).sort(), [...c.models].sort());

const completion = await client.completions.create({
  model: c.decoder, prompt: c.prompt, max_tokens: c.max_tokens, temperature: 0 });
expectEqual("completion text (vkf-run's)", completion.choices[0].text, c.expected);
expectEqual("completion usage", completion.usage.completion_tokens, c.expected_tokens);

let streamed = "";
const stream = await client.completions.create({
  model: c.decoder, prompt: c.prompt, max_tokens: c.max_tokens, temperature: 0, stream: true });
for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? "";
expectEqual("streamed completion", streamed, c.expected);

const messages = [{ role: "system", content: "Answer in the words of the King James Bible." },
                  { role: "user", content: "Who made the heaven and the earth?" }];
const chat = await client.chat.completions.create({ model: c.decoder, messages, max_tokens: 16, temperature: 0 });
const answer = chat.choices[0].message;
expectEqual("chat role", answer.role, "assistant");
if (typeof answer.content !== "string") fail("chat content is not text");
if (!["stop", "length"].includes(chat.choices[0].finish_reason)) fail("chat finish_reason " + chat.choices[0].finish_reason);
let chatStreamed = "";
let roles = 0;
let finish = null;
const chatStream = await client.chat.completions.create({
  model: c.decoder, messages, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true } });
let usage = null;
for await (const chunk of chatStream) {
  if (chunk.usage) usage = chunk.usage;
  const choice = chunk.choices[0];
  if (!choice) continue;
  if (choice.delta.role) roles++;
  chatStreamed += choice.delta.content ?? "";
  if (choice.finish_reason) finish = choice.finish_reason;
}
expectEqual("streamed chat", chatStreamed, answer.content);
expectEqual("streamed chat roles", roles, 1);
expectEqual("streamed chat finish", finish, chat.choices[0].finish_reason);
// The same prompt again: the counts of the first answer, and the first request's whole KV
// blocks taken from the prefix cache (16 tokens each, never the prompt's last token).
const { prompt_tokens_details: streamedDetails, ...streamedCounts } = usage ?? {};
const { prompt_tokens_details: firstDetails, ...firstCounts } = chat.usage;
expectEqual("streamed chat usage", streamedCounts, firstCounts);
expectEqual("streamed chat cached tokens", streamedDetails?.cached_tokens, 16 * Math.floor((usage?.prompt_tokens - 1) / 16));
if (typeof firstDetails?.cached_tokens !== "number") fail("chat usage without prompt_tokens_details.cached_tokens");

const floats = await client.embeddings.create({ model: c.encoder, input: c.embed, encoding_format: "float" });
const packed = await client.embeddings.create({ model: c.encoder, input: c.embed });  // base64 on the wire
expectEqual("embeddings count", floats.data.length, c.embed.length);
for (const [i, e] of floats.data.entries()) {
  expectEqual(`embedding ${i} size`, e.embedding.length, c.hidden);
  const norm = Math.sqrt(e.embedding.reduce((s, x) => s + x * x, 0));
  if (Math.abs(norm - 1) > 1e-4) fail(`embedding ${i} norm ${norm}`);
  const other = packed.data[i].embedding;
  if (other.length !== e.embedding.length || other.some((x, j) => Math.fround(x) !== Math.fround(e.embedding[j])))
    fail(`embedding ${i}: base64 and float differ`);
}
if (floats.usage.prompt_tokens <= 0) fail("embedding usage");

try {
  await client.completions.create({ model: c.decoder, prompt: "x", max_tokens: 0 });
  fail("max_tokens 0 accepted");
} catch (e) {
  if (!(e instanceof OpenAI.BadRequestError)) fail("max_tokens 0: " + e);
  else {
    expectEqual("error status", e.status, 400);
    expectEqual("error param", e.param, "max_tokens");
  }
}
console.log(failures ? `${failures} SDK failure(s)` : "openai SDK: all checks passed");
process.exit(failures ? 1 : 0);
