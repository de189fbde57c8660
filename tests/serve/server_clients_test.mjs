// Real OpenAI clients from npm besides the `openai` SDK against a running vkf-server:
// LangChain JS (@langchain/openai: OpenAI for completions, several prompts in one generate,
// ChatOpenAI whole and streamed) and the Vercel AI SDK (ai with @ai-sdk/openai-compatible:
// generateText and streamText on completions and chat). Greedy text must be what the case
// gives (vkf-run's). Every HTTP answer the clients get is written to CAPTURE_FILE (JSON) for
// server_clients_test.py to validate against OpenAI's OpenAPI schemas.
// withStructuredOutput, bindTools and generateObject need response_format and tools, which
// vkf-server refuses for now (docs/SERVER.md "Request fields"): not driven here.
// usage: node server_clients_test.mjs NPM_DIR BASE_URL CASE_JSON CAPTURE_FILE   (exit 1 on any failure)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, baseURL, caseJson, captureFile] = process.argv.slice(2);
const c = JSON.parse(caseJson);

// A package's ES module entry, imported from NPM_DIR's node_modules.
async function load(name) {
  const folder = join(npmDir, "node_modules", name);
  const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
  let entry = manifest.exports?.["."]?.import ?? manifest.module ?? manifest.main;
  if (typeof entry === "object") entry = entry.default;
  return import(pathToFileURL(join(folder, entry)).href);
}

let failures = 0;
const fail = (message) => {
  failures++;
  console.log("FAIL: " + message);
};
const expectEqual = (what, got, want) => {
  if (JSON.stringify(got) !== JSON.stringify(want)) fail(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
};

// fetch, keeping a copy of every answer's body.
const captured = [];
const teeFetch = async (input, init) => {
  const res = await fetch(input, init);
  const url = typeof input === "string" ? input : (input.url ?? String(input));
  captured.push(res.clone().text().then((body) => ({
    url, status: res.status, content_type: res.headers.get("content-type"), request: init?.body ?? null, body })));
  return res;
};

async function step(what, fn) {
  try {
    await fn();
  } catch (e) {
    fail(`${what}: ${e?.stack ?? e}`);
  }
}

const { ChatOpenAI, OpenAI: LangChainOpenAI } = await load("@langchain/openai");
const { generateText, streamText } = await load("ai");
const { createOpenAICompatible } = await load("@ai-sdk/openai-compatible");

const configuration = { baseURL, fetch: teeFetch };
const messages = [{ role: "system", content: c.system }, { role: "user", content: c.question }];

await step("LangChain OpenAI (completions)", async () => {
  const llm = new LangChainOpenAI({ model: c.model, apiKey: "unused", configuration, temperature: 0,
                                    maxTokens: c.max_tokens, maxRetries: 0 });
  expectEqual("LangChain completion", await llm.invoke(c.prompts[0]), c.completions[0]);
  const both = await llm.generate(c.prompts);  // several prompts in one request
  expectEqual("LangChain generate([a, b])", both.generations.map((g) => g[0].text), c.completions);
});

await step("LangChain ChatOpenAI", async () => {
  const chat = new ChatOpenAI({ model: c.model, apiKey: "unused", configuration, temperature: 0,
                                maxTokens: c.max_tokens, maxRetries: 0 });
  const answer = await chat.invoke(messages);
  expectEqual("LangChain chat", answer.content, c.chat);
  let streamed = "";
  for await (const chunk of await chat.stream(messages)) streamed += chunk.content;
  expectEqual("LangChain chat streamed", streamed, c.chat);
});

await step("AI SDK", async () => {
  const provider = createOpenAICompatible({ name: "vkf", baseURL, apiKey: "unused", fetch: teeFetch,
                                            includeUsage: true });
  const settings = { temperature: 0, maxOutputTokens: c.max_tokens, maxRetries: 0 };
  const text = await generateText({ model: provider.completionModel(c.model), prompt: c.prompts[0], ...settings });
  // Its completion model sends "user:\n{prompt}\n\nassistant:\n" with the stop "\nuser:".
  expectEqual("AI SDK generateText (completions)", text.text, c.ai_sdk_completion);
  // AI SDK 7 takes the system prompt as `instructions`, not as a message.
  const chatInput = { instructions: c.system, messages: [messages[1]] };
  const chat = await generateText({ model: provider.chatModel(c.model), ...chatInput, ...settings });
  expectEqual("AI SDK generateText (chat)", chat.text, c.chat);
  expectEqual("AI SDK usage", chat.usage.outputTokens, c.chat_tokens);
  const stream = streamText({ model: provider.chatModel(c.model), ...chatInput, ...settings,
                              onError: ({ error }) => fail("AI SDK streamText: " + error) });
  let streamed = "";
  for await (const part of stream.textStream) streamed += part;
  expectEqual("AI SDK streamText (chat)", streamed, c.chat);
  expectEqual("AI SDK streamText finish", await stream.finishReason, chat.finishReason);
  const completion = streamText({ model: provider.completionModel(c.model), prompt: c.prompts[0], ...settings });
  let streamedCompletion = "";
  for await (const part of completion.textStream) streamedCompletion += part;
  expectEqual("AI SDK streamText (completions)", streamedCompletion, c.ai_sdk_completion);
});

writeFileSync(captureFile, JSON.stringify(await Promise.all(captured)));
console.log(failures ? `${failures} client failure(s)` : `LangChain and AI SDK: all checks passed (${captured.length} answers captured)`);
process.exit(failures ? 1 : 0);
