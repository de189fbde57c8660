// Real OpenAI clients from npm besides the `openai` SDK against a running vkf-server:
// LangChain JS (@langchain/openai: OpenAI for completions, several prompts in one generate,
// ChatOpenAI whole and streamed) and the Vercel AI SDK (ai with @ai-sdk/openai-compatible:
// generateText and streamText on completions and chat). Greedy text must be what the case
// gives (vkf-run's). Every HTTP answer the clients get is written to CAPTURE_FILE (JSON) for
// server_clients_test.py to validate against OpenAI's OpenAPI schemas.
// Structured output and tools: LangChain's withStructuredOutput (its jsonSchema method, a zod
// schema, sends response_format json_schema; its functionCalling method, a plain JSON schema,
// sends a tool and a tool_choice naming it), bindTools with tool_choice forcing a named tool
// (whole and streamed), and the AI SDK's generateObject and generateText with Output.object
// (response_format json_schema). kjv-bloom writes junk, but the grammar makes it valid junk:
// every result must pass its zod schema.
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
const { generateText, streamText, generateObject, jsonSchema, Output } = await load("ai");
const { z } = await load("zod");
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

// A schema small enough for a grammar-bound junk writer to finish well inside its tokens.
const verdictSchema = {
  type: "object", properties: { answer: { type: "string", enum: ["yes", "no", "maybe"] }, sure: { type: "boolean" } },
  required: ["answer", "sure"], additionalProperties: false };
const verdict = z.strictObject({ answer: z.enum(["yes", "no", "maybe"]), sure: z.boolean() });
const expectVerdict = (what, value) => {
  const parsed = verdict.safeParse(value);
  if (!parsed.success) fail(`${what}: ${JSON.stringify(value)} does not match the schema: ${parsed.error.message}`);
};
const structuredTokens = 64;

await step("LangChain withStructuredOutput", async () => {
  const chat = new ChatOpenAI({ model: c.model, apiKey: "unused", configuration, temperature: 0,
                                maxTokens: structuredTokens, maxRetries: 0 });
  const viaSchema = chat.withStructuredOutput(verdict, { name: "verdict", method: "jsonSchema" });
  expectVerdict("withStructuredOutput (jsonSchema, zod)", await viaSchema.invoke(messages));
  const viaTool = chat.withStructuredOutput(verdictSchema, { name: "verdict", method: "functionCalling" });
  expectVerdict("withStructuredOutput (functionCalling, JSON schema)", await viaTool.invoke(messages));
  const raw = await chat.withStructuredOutput(verdict, { name: "verdict", method: "functionCalling", includeRaw: true })
    .invoke(messages);
  expectVerdict("withStructuredOutput (functionCalling, zod, includeRaw)", raw.parsed);
  expectEqual("functionCalling's call", raw.raw.tool_calls?.map((t) => t.name), ["verdict"]);
});

await step("LangChain bindTools", async () => {
  const chat = new ChatOpenAI({ model: c.model, apiKey: "unused", configuration, temperature: 0,
                                maxTokens: 96, maxRetries: 0 });
  const tools = [
    { type: "function", function: { name: "judge", description: "Give a verdict.", parameters: verdictSchema } },
    { type: "function", function: { name: "look_up", description: "Find a verse.",
                                     parameters: { type: "object", properties: { book: { type: "string", enum: ["Genesis", "John"] } },
                                                   required: ["book"], additionalProperties: false } } }];
  const withTools = chat.bindTools(tools, { tool_choice: "judge" });
  const answer = await withTools.invoke(messages);
  expectEqual("bindTools call names", answer.tool_calls?.map((t) => t.name), ["judge"]);
  expectEqual("bindTools finish_reason", answer.response_metadata?.finish_reason, "tool_calls");
  if (!answer.tool_calls?.[0]?.id) fail(`bindTools: a call without an id: ${JSON.stringify(answer.tool_calls)}`);
  expectVerdict("bindTools arguments", answer.tool_calls?.[0]?.args);
  let streamed;
  for await (const chunk of await withTools.stream(messages)) streamed = streamed ? streamed.concat(chunk) : chunk;
  // Greedy: the same call as the whole answer's (each answer gets its own id).
  const callsOf = (m) => m?.tool_calls?.map((t) => ({ name: t.name, args: t.args, hasId: Boolean(t.id) }));
  expectEqual("bindTools streamed calls", callsOf(streamed), callsOf(answer));
  const required = await chat.bindTools(tools, { tool_choice: "required" }).invoke(messages);
  if (required.tool_calls?.length !== 1 || !["judge", "look_up"].includes(required.tool_calls[0].name))
    fail(`bindTools (required): ${JSON.stringify(required.tool_calls)}`);
});

await step("AI SDK generateObject", async () => {
  // supportsStructuredOutputs: send the schema (response_format json_schema), not json_object.
  const provider = createOpenAICompatible({ name: "vkf", baseURL, apiKey: "unused", fetch: teeFetch,
                                            supportsStructuredOutputs: true });
  const settings = { temperature: 0, maxOutputTokens: structuredTokens, maxRetries: 0 };
  const result = await generateObject({ model: provider.chatModel(c.model), schema: jsonSchema(verdictSchema),
                                        schemaName: "verdict", instructions: c.system, prompt: c.question, ...settings });
  expectVerdict("AI SDK generateObject (JSON schema)", result.object);
  const fromZod = await generateObject({ model: provider.chatModel(c.model), schema: verdict, prompt: c.question,
                                         ...settings });
  expectVerdict("AI SDK generateObject (zod)", fromZod.object);
  // AI SDK 7 deprecates generateObject for generateText with an output setting.
  const viaText = await generateText({ model: provider.chatModel(c.model), output: Output.object({ schema: verdict }),
                                       prompt: c.question, ...settings });
  expectVerdict("AI SDK generateText (Output.object)", viaText.output);
});

writeFileSync(captureFile, JSON.stringify(await Promise.all(captured)));
console.log(failures ? `${failures} client failure(s)` : `LangChain and AI SDK (text, structured output, tools): all checks passed (${captured.length} answers captured)`);
process.exit(failures ? 1 : 0);
