#!/usr/bin/env python3
"""scripts/llama_speed_compare.py without measuring anything (the measurement takes tens of
minutes and fetches npm packages, so it is not a CI test): --dry-run's commands (the Vulkan
package, the tools, llama-quantize --pure, each side's command and environment, the rounds
alternating), the argument errors, and the functions that judge a run's rows and reduce them
(a llama-bench that fell back to the CPU is refused; medians and ratios).

usage: llama_speed_dry_run_test.py SCRIPT
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

failures = 0


def fail(message):
    global failures
    failures += 1
    print("FAIL: " + message)


def run(script, args):
    return subprocess.run([sys.executable, script] + args, capture_output=True, text=True, timeout=60)


def check_dry_run(script):
    with tempfile.TemporaryDirectory(prefix="vkf_llama_speed_") as tmp:
        work = os.path.join(tmp, "work")
        proc = run(script, ["--dry-run", "--build", tmp, "--work", work, "--types", "Q8_0,Q6_K-pure",
                            "--rounds", "2", "--out-dir", os.path.join(tmp, "out")])
        if proc.returncode != 0:
            fail("--dry-run: exit %d: %s" % (proc.returncode, proc.stderr))
            return
        out = proc.stdout
        expected = ["npm pack --silent @node-llama-cpp/linux-x64-vulkan@3.22.1",
                    "tools/llama-bench/llama-bench.cpp", "tools/quantize/quantize.cpp", "-DNDEBUG",
                    "vkf-make-checkpoint --out %s/bloom-560m --preset bloom-560m --seed 5" % work,
                    "llama-quantize --pure %s/bloom-560m-F16.gguf" % work,
                    "bloom-560m-Q6_K-pure.gguf.tmp Q6_K", "bloom-560m-Q8_0.gguf.tmp Q8_0",
                    "GGML_VK_VISIBLE_DEVICES=0 VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
                    "vkf-bench llama -m %s/bloom-560m-Q8_0.gguf -p 64 -n 32 -r 1 -o json --check-tokens 4" % work,
                    "-o json -t 2 -ngl 99", "-o json -t 2 -ngl 0"]
        for text in expected:
            if text not in out:
                fail("--dry-run does not print %r:\n%s" % (text, out))
        order = [line.split("] ")[1].split(" on ")[0] for line in out.splitlines() if line.startswith("[round")]
        if len(order) != 2 * 2 * 3:
            fail("2 rounds of 2 files by 3 sides should be 12 runs, not %d: %s" % (len(order), order))
        elif order[0] != "vkformer-vulkan" or order[6] == order[0]:
            fail("round 1 should start with vkformer and round 2 with another side: %s" % order)
        if os.path.exists(work) or os.path.exists(os.path.join(tmp, "out")):
            fail("--dry-run wrote into %s" % tmp)


def check_errors(script):
    for args, message in ((["--rounds", "0"], "--rounds must be at least 1, not 0"),
                          (["--types", "Q8_0,Q9_9"], "unknown type 'Q9_9' in --types"),
                          (["--types", ","], "--types names no type"),
                          (["--sides", "llama.cpp-metal"], "unknown side 'llama.cpp-metal' in --sides"),
                          (["--check-tokens", "1"], "--check-tokens must be at least 2, not 1")):
        proc = run(script, ["--dry-run"] + args)
        if proc.returncode != 2 or message not in proc.stderr:
            fail("%s: expected exit 2 naming %r, got %d: %s" % (args, message, proc.returncode, proc.stderr))


def check_functions(script):
    spec = importlib.util.spec_from_file_location("llama_speed_compare", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cpu_row = {"backends": "CPU", "gpu_info": "", "devices": "auto"}
    vulkan_row = {"backends": "Vulkan", "gpu_info": "llvmpipe (LLVM 15.0.6, 256 bits)"}
    if module.check_rows("llama.cpp-vulkan", [cpu_row]) is None:
        fail("a llama.cpp-vulkan run whose rows say CPU was accepted")
    if module.check_rows("llama.cpp-vulkan", [dict(vulkan_row, gpu_info="NVIDIA GeForce")]) is None:
        fail("a llama.cpp-vulkan run on another device than llvmpipe was accepted")
    if module.check_rows("llama.cpp-vulkan", [vulkan_row]) is not None or module.check_rows("llama.cpp-cpu",
                                                                                              [cpu_row]):
        fail("rows of the right backend were refused")

    def row(n_prompt, n_gen, samples):
        return {"n_prompt": n_prompt, "n_gen": n_gen, "samples_ts": samples}

    runs = [{"type": "Q8_0", "side": "vkformer-vulkan", "rows": [row(64, 0, [9.0]), row(0, 32, [3.0])]},
            {"type": "Q8_0", "side": "vkformer-vulkan", "rows": [row(64, 0, [10.0]), row(0, 32, [2.0])]},
            {"type": "Q8_0", "side": "vkformer-vulkan", "rows": [row(64, 0, [30.0]), row(0, 32, [4.0])]},
            {"type": "Q8_0", "side": "llama.cpp-vulkan", "rows": [row(64, 0, [2.0, 3.0, 4.0]), row(0, 32, [1.0])]}]
    summary = module.summarize(None, runs)
    pp, tg = summary["Q8_0"]["pp64"], summary["Q8_0"]["tg32"]
    if pp["vkformer-vulkan"]["median_ts"] != 10.0 or pp["llama.cpp-vulkan"]["median_ts"] != 3.0:
        fail("pp64 medians: %s" % pp)
    if abs(pp["vkformer_over_llama.cpp-vulkan"] - 10.0 / 3.0) > 1e-12 or tg["vkformer_over_llama.cpp-vulkan"] != 3.0:
        fail("ratios: %s %s" % (pp, tg))
    if "vkformer_over_llama.cpp-cpu" in pp:
        fail("a ratio against a side that did not run: %s" % pp)
    meta = {"llama_cpp": "0ad4a86", "vkformer_commit": "abc1234", "rounds_done": 3, "reps": 1, "cpu": "AMD EPYC",
            "cores": 2, "device": "llvmpipe", "load_note": "Load 10.", "threads": 2, "command": "c",
            "pending": "p --types Q4_K_M", "example_commands": ["x"]}
    text = module.markdown({"meta": meta, "summary": summary, "refused": {"Q4_K_M": "exit 1: error: Q4_K and Q6_K"},
                            "runs": runs})
    for line in ("| Q8_0 | pp64 | 10.00 (9.00-30.00) | 3.00 (2.00-4.00) | - | 3.33x | - |",
                 "| Q8_0 | tg32 | 3.00 (2.00-4.00) | 1.00 (1.00-1.00) | - | 3.00x | - |",
                 "Q4_K_M: not measured, vkf-bench llama did not run the file: `exit 1: error: Q4_K and Q6_K`",
                 "`p --types Q4_K_M`", "Load 10."):
        if line not in text:
            fail("the markdown lacks %r:\n%s" % (line, text))
    # The files written after a run: a refused type's rerun gets a name of its own.
    with tempfile.TemporaryDirectory(prefix="vkf_llama_speed_") as tmp:
        args = module.parse_args(["--out-dir", tmp, "--name", "x", "--rounds", "3"])
        for r in runs:
            r.update(round=0, loadavg_before=[4.0, 3.0, 2.0], command="cmd " + r["side"])
        module.write_results(args, ["--name", "x"], (5.0, 4.0, 3.0), runs, {"Q4_K_M": "refused"})
        with open(os.path.join(tmp, "x.json"), encoding="utf-8") as f:
            doc = json.load(f)
        pending = doc["meta"]["pending"]
        if not pending.endswith("--types Q4_K_M --rounds 3 --reps 1 --name x-Q4_K_M"):
            fail("the rerun command %r would not keep the rounds or would overwrite x.json" % pending)
        if doc["summary"] != summary or not os.path.exists(os.path.join(tmp, "x.md")):
            fail("x.json's summary %s or x.md is missing" % doc["summary"])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    script = sys.argv[1]
    check_dry_run(script)
    check_errors(script)
    check_functions(script)
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
