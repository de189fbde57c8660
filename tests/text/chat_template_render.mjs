// The real MPT chat templates (tests/text/data/chat/*.tokenizer_config.json) rendered by Hugging
// Face's own Jinja implementation, @huggingface/jinja, over every conversation of
// conversations.json with add_generation_prompt, then compared with render_chat by
// test_chat_format's ChatFormatJinja suite (given the renders in VKF_CHAT_RENDERS).
//
// usage: node chat_template_render.mjs NPM_DIR TEST_CHAT_FORMAT DATA_DIR
// Installs the package into NPM_DIR once; exits 77 (skipped) when npm cannot.

import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [npmDir, testBinary, dataDir] = process.argv.slice(2).map((p) => resolve(p));
const PACKAGE = "@huggingface/jinja";
const VERSION = "0.5.11";

function install() {
    const folder = join(npmDir, "node_modules", ...PACKAGE.split("/"));
    const manifest = join(folder, "package.json");
    if (!existsSync(manifest) || JSON.parse(readFileSync(manifest, "utf8")).version !== VERSION) {
        try {
            execFileSync("npm", ["install", "--prefix", npmDir, "--no-audit", "--no-fund", `${PACKAGE}@${VERSION}`], {
                stdio: ["ignore", "ignore", "pipe"],
                timeout: 600000,
            });
        } catch (e) {
            console.log(`SKIPPED: npm could not install ${PACKAGE}@${VERSION}: ${String(e.stderr ?? e).slice(-2000)}`);
            process.exit(77);
        }
    }
    return join(folder, "dist", "index.js");
}

const { Template } = await import(pathToFileURL(install()).href);
const conversations = JSON.parse(readFileSync(join(dataDir, "conversations.json"), "utf8"));
const renders = [];
for (const file of readdirSync(dataDir).filter((f) => f.endsWith(".tokenizer_config.json")).sort()) {
    const config = JSON.parse(readFileSync(join(dataDir, file), "utf8"));
    const template = new Template(config.chat_template);
    for (const messages of conversations) {
        const entry = { template: file, messages };
        try {
            entry.text = template.render({
                messages,
                add_generation_prompt: true,
                bos_token: config.bos_token,
                eos_token: config.eos_token,
            });
        } catch (e) {
            entry.error = String(e);
        }
        renders.push(entry);
    }
}

const tmp = mkdtempSync(join(tmpdir(), "vkf_chat_"));
try {
    const file = join(tmp, "renders.json");
    writeFileSync(file, JSON.stringify(renders));
    console.log(`${PACKAGE} ${VERSION}: ${renders.length} renders (templates x conversations)`);
    // A cross-build's suite runs through its emulator (VKF_TEST_EMULATOR, from tests/CMakeLists.txt).
    const command = (process.env.VKF_TEST_EMULATOR ?? "").split(" ").filter((w) => w !== "");
    command.push(testBinary, "--gtest_filter=ChatFormatJinja.*");
    const run = spawnSync(command[0], command.slice(1), {
        env: { ...process.env, VKF_CHAT_RENDERS: file },
        stdio: "inherit",
    });
    process.exitCode = run.status ?? 1;
} finally {
    rmSync(tmp, { recursive: true, force: true });
}
