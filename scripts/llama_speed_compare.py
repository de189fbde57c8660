#!/usr/bin/env python3
"""vkformer against llama.cpp on the same GGUF files (issue 44): llama-bench's pp/tg tests with
llama.cpp's CPU backend, its Vulkan backend on lavapipe, and `vkf-bench llama` on lavapipe.

What it fetches and builds, once, into --work (a stamp per tool rebuilds it only when its
libraries move):
  - npm node-llama-cpp 3.22.1: llama.cpp's source (tests/io/gguf_compare.py installs it) for
    gguf-py, llama-bench and llama-quantize;
  - npm @node-llama-cpp/linux-x64 3.22.1 (tests/quant/ggml_reference.py installs it): the CPU
    libraries; llama-bench and llama-quantize are compiled against them;
  - npm @node-llama-cpp/linux-x64-vulkan 3.22.1 (`npm pack`, unpacked here): the Vulkan
    libraries; a second llama-bench is compiled against them and run with lavapipe as its one
    device (VK_ICD_FILENAMES, GGML_VK_VISIBLE_DEVICES=0: ggml skips CPU-type devices unless
    named), and every row must say backend Vulkan on llvmpipe.
Then a BLOOM-560m-shaped random checkpoint (vkf-make-checkpoint --preset bloom-560m --seed 5),
its F16 GGUF written with gguf-py (tests/apps/gguf_run_test.py's converter, kjv-bloom's
tokenizer padded to the vocabulary), and llama-quantize's file of each --types entry (TYPE,
or TYPE-pure for llama-quantize --pure). A file vkformer refuses is reported with the refusal
and not measured further.

Measuring: --rounds rounds; in each, every file is run by the three sides one after another
(the order rotated each round, so that the machine's load falls on all of them alike), each
run one process with its own untimed warm-up and --reps timed repetitions of pp and tg. The
figure of a side is the median of its samples over all rounds; the load average is recorded
before every run. Results go to OUT_DIR/NAME.json (every row, the commands, the load) and
OUT_DIR/NAME.md (the table).

Not a CI test: it takes tens of minutes. --dry-run prints what it would run, fetching and
running nothing (tests/apps/llama_speed_dry_run_test.py checks that and the argument errors).
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests", d) for d in ("io", "quant", "apps")]

VULKAN_PACKAGE = ("@node-llama-cpp/linux-x64-vulkan", "3.22.1")
LAVAPIPE_ICD = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
SIDES = ("vkformer-vulkan", "llama.cpp-vulkan", "llama.cpp-cpu")
TYPES = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q3_K_S", "Q3_K_M",
         "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M")
# llama-bench and llama-quantize: their sources, and the libraries each links (stems; the npm
# copies carry versioned names such as libllama.vulkan.v0.5.0.so without unversioned links).
TOOLS = {"llama-bench": ["tools/llama-bench/main.cpp", "tools/llama-bench/llama-bench.cpp"],
         "llama-quantize": ["tools/quantize/main.cpp", "tools/quantize/quantize.cpp"]}
LIBRARY_STEMS = ("libllama", "libllama-common", "libggml", "libggml-base")
RUN_TIMEOUT_S = 3600


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"),
                   help="vkformer build folder with apps/bench/vkf-bench and apps/vkf-make-checkpoint")
    p.add_argument("--work", help="cache of packages, tools, checkpoint and GGUF files (default BUILD/llama-speed)")
    p.add_argument("--types", default="Q8_0,Q4_K_M",
                   help="GGUF types to compare, llama-quantize's names; TYPE-pure for --pure (default Q8_0,Q4_K_M)")
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    p.add_argument("--reps", type=int, default=1, help="timed repetitions per run (default 1)")
    p.add_argument("-p", "--n-prompt", type=int, default=64, help="pp test's prompt tokens (default 64)")
    p.add_argument("-n", "--n-gen", type=int, default=32, help="tg test's generated tokens (default 32)")
    p.add_argument("--threads", type=int, default=2, help="llama.cpp's threads (default 2)")
    p.add_argument("--check-tokens", type=int, default=4, help="vkf-bench llama's correctness check (default 4)")
    p.add_argument("--sides", default=",".join(SIDES), help="which of %s to run (default all)" % ", ".join(SIDES))
    p.add_argument("--out-dir", default=os.path.join(ROOT, "bench", "results", "llama_speed"))
    p.add_argument("--name", help="result files' stem (default lavapipe-DATE-bloom-560m-vs-llama.cpp)")
    p.add_argument("--dry-run", action="store_true", help="print the commands; fetch and run nothing")
    p.add_argument("--render", metavar="FILE.json", help="only rewrite FILE.md from a result file FILE.json")
    a = p.parse_args(argv)
    for flag, value, least in (("--rounds", a.rounds, 1), ("--reps", a.reps, 1), ("--n-prompt", a.n_prompt, 1),
                               ("--n-gen", a.n_gen, 1), ("--threads", a.threads, 1),
                               ("--check-tokens", a.check_tokens, 2)):
        if value < least:
            p.error("%s must be at least %d, not %d" % (flag, least, value))
    a.types = [t for t in a.types.split(",") if t]
    for t in a.types:
        if (t[:-len("-pure")] if t.endswith("-pure") else t) not in TYPES:
            p.error("unknown type '%s' in --types (one of %s, or TYPE-pure)" % (t, ", ".join(TYPES)))
    if not a.types:
        p.error("--types names no type")
    a.sides = [s for s in a.sides.split(",") if s]
    for s in a.sides:
        if s not in SIDES:
            p.error("unknown side '%s' in --sides (one of %s)" % (s, ", ".join(SIDES)))
    a.work = os.path.abspath(a.work or os.path.join(a.build, "llama-speed"))
    a.build = os.path.abspath(a.build)
    return a


class Runner:
    """Runs commands, or with --dry-run prints them; every command is logged for the result file."""

    def __init__(self, dry_run):
        self.dry_run = dry_run
        self.log = []

    def __call__(self, cmd, env=None, cwd=None, capture=False, timeout=None):
        shown = " ".join("%s=%s" % kv for kv in sorted((env or {}).items())) + (" " if env else "")
        shown = ("cd %s && " % cwd if cwd else "") + shown + " ".join(shlex.quote(str(c)) for c in cmd)
        self.log.append(shown)
        print("+ " + shown, flush=True)
        if self.dry_run:
            return subprocess.CompletedProcess(cmd, 0, "", "")
        full_env = dict(os.environ, **(env or {}))
        proc = subprocess.run([str(c) for c in cmd], env=full_env, cwd=cwd, timeout=timeout,
                              capture_output=capture, text=True)
        return proc


def lib_flag(libs, stem):
    for name in sorted(os.listdir(libs)):
        if name == stem + ".so" or (name.startswith(stem + ".") and name.endswith(".so") and ".v" in name):
            return "-l:" + name
    sys.exit("no %s library in %s" % (stem, libs))


def build_tool(run, source, libs, out, files):
    """`files` of llama.cpp's `source` compiled against the libraries in `libs` into `out`; kept
    while its stamp names the same libraries (the tools find them by the path linked in)."""
    stamp = out + ".libraries"
    if os.path.exists(out) and os.path.exists(stamp) and open(stamp, encoding="utf-8").read() == libs:
        return out
    includes = ["include", "ggml/include", "common", "vendor", os.path.dirname(files[0])]
    flags = [lib_flag(libs, s) for s in LIBRARY_STEMS] if not run.dry_run else ["-l..."]
    # -DNDEBUG: llama-bench warns "asserts enabled, performance may be affected" without it.
    proc = run(["g++", "-O2", "-DNDEBUG", "-std=c++17"] + ["-I" + os.path.join(source, i) for i in includes]
               + [os.path.join(source, f) for f in files] + ["-L" + libs] + flags
               + ["-Wl,-rpath," + libs, "-o", out + ".tmp"], capture=True)
    if proc.returncode != 0:
        sys.exit("compiling %s failed:\n%s" % (out, proc.stderr[-3000:]))
    if not run.dry_run:
        os.replace(out + ".tmp", out)
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(libs)
    return out


def vulkan_libraries(run, work):
    name, version = VULKAN_PACKAGE
    folder = os.path.join(work, "npm-vulkan")
    libs = os.path.join(folder, "package", "bins", "linux-x64-vulkan")
    if os.path.exists(os.path.join(libs, "libggml-vulkan.so")):
        return libs
    if not run.dry_run:
        os.makedirs(folder, exist_ok=True)
    if run(["npm", "pack", "--silent", "%s@%s" % (name, version)], cwd=folder, capture=True).returncode != 0:
        sys.exit("npm pack %s@%s failed" % (name, version))
    tarball = "%s-%s.tgz" % (name.lstrip("@").replace("/", "-"), version)
    run(["tar", "-xzf", tarball], cwd=folder)
    if not run.dry_run and not os.path.exists(os.path.join(libs, "libggml-vulkan.so")):
        sys.exit("%s@%s has no %s" % (name, version, os.path.join(libs, "libggml-vulkan.so")))
    return libs


def prepare_tools(run, work):
    """{name: (program, libraries)} for llama-quantize, llama-bench (CPU) and llama-bench (Vulkan)."""
    tools = os.path.join(work, "tools")
    npm = os.path.join(work, "npm")
    if run.dry_run:
        source, cpu_libs = os.path.join(npm, "llama.cpp-3.22.1"), os.path.join(npm, "ggml-prebuilt", "...")
    else:
        os.makedirs(tools, exist_ok=True)
        import gguf_compare  # node-llama-cpp's llama.cpp source, installed on first use
        import ggml_reference  # the CPU libraries, installed on first use
        source = os.path.dirname(gguf_compare.gguf_py_dir(npm))
        cpu_libs = os.path.dirname(ggml_reference.library(npm))
    vk_libs = vulkan_libraries(run, work)
    return source, {
        "llama-quantize": (build_tool(run, source, cpu_libs, os.path.join(tools, "llama-quantize"),
                                      TOOLS["llama-quantize"]), cpu_libs),
        "llama.cpp-cpu": (build_tool(run, source, cpu_libs, os.path.join(tools, "llama-bench-cpu"),
                                     TOOLS["llama-bench"]), cpu_libs),
        "llama.cpp-vulkan": (build_tool(run, source, vk_libs, os.path.join(tools, "llama-bench-vulkan"),
                                        TOOLS["llama-bench"]), vk_libs),
    }


def prepare_files(run, args, source, quantize):
    """The checkpoint, its F16 GGUF and each type's GGUF: {type: path}."""
    ckpt = os.path.join(args.work, "bloom-560m")
    f16 = os.path.join(args.work, "bloom-560m-F16.gguf")
    if not os.path.exists(os.path.join(ckpt, "model.safetensors")):
        run([os.path.join(args.build, "apps", "vkf-make-checkpoint"), "--out", ckpt, "--preset", "bloom-560m",
             "--seed", "5"])
    if not os.path.exists(f16):
        print("+ gguf_run_test.convert(%s -> %s) with gguf-py" % (ckpt, f16), flush=True)
        if not run.dry_run:
            write_f16_gguf(source, ckpt, f16)
    files = {}
    for t in args.types:
        qtype, pure = (t[:-len("-pure")], True) if t.endswith("-pure") else (t, False)
        path = os.path.join(args.work, "bloom-560m-%s.gguf" % t)
        if not os.path.exists(path):
            program, libs = quantize
            proc = run([program] + (["--pure"] if pure else []) + [f16, path + ".tmp", qtype], cwd=libs,
                       capture=True)
            if proc.returncode != 0:
                sys.exit("llama-quantize %s failed:\n%s" % (t, proc.stderr[-3000:]))
            if not run.dry_run:
                os.replace(path + ".tmp", path)
        files[t] = path
    return files


def write_f16_gguf(source, ckpt, out):
    """The converter needs tokenizer.json and BLOOM's bos/eos ids; the random checkpoint has
    neither, so kjv-bloom's tokenizer (padded to the vocabulary by the converter) stands in."""
    sys.path.insert(0, os.path.join(source, "gguf-py"))
    import gguf
    import numpy as np
    import gguf_run_test
    shutil.copy(os.path.join(ROOT, "models", "kjv-bloom", "tokenizer.json"), os.path.join(ckpt, "tokenizer.json"))
    config_path = os.path.join(ckpt, "config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    config.setdefault("bos_token_id", 1)
    config.setdefault("eos_token_id", 2)
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    gguf_run_test.convert(gguf, np, ckpt, out + ".tmp")
    os.replace(out + ".tmp", out)


def side_command(args, side, tools, path):
    """(command, environment, working folder) of one run of `side` on the file at `path`."""
    lavapipe = {"VK_ICD_FILENAMES": LAVAPIPE_ICD}
    common = ["-m", path, "-p", str(args.n_prompt), "-n", str(args.n_gen), "-r", str(args.reps), "-o", "json"]
    if side == "vkformer-vulkan":
        return ([os.path.join(args.build, "apps", "bench", "vkf-bench"), "llama"] + common
                + ["--check-tokens", str(args.check_tokens)],
                dict(lavapipe, VKF_VALIDATION="0", XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp")), None)
    program, libs = tools[side]
    # ggml loads its backends from the working folder: run in the libraries' folder.
    if side == "llama.cpp-vulkan":
        return ([program] + common + ["-t", str(args.threads), "-ngl", "99"],
                dict(lavapipe, GGML_VK_VISIBLE_DEVICES="0"), libs)
    return [program] + common + ["-t", str(args.threads), "-ngl", "0"], {}, libs


def check_rows(side, rows):
    """The rows' backend must be the side's: llama.cpp's Vulkan on llvmpipe, not its CPU."""
    for row in rows:
        backend, gpu = row.get("backends", ""), row.get("gpu_info", "") + row.get("devices", "")
        if side == "llama.cpp-vulkan" and ("Vulkan" not in backend or "llvmpipe" not in gpu):
            return "llama-bench ran on backend '%s', device '%s', not Vulkan on llvmpipe" % (backend, gpu)
        if side == "vkformer-vulkan" and "llvmpipe" not in row.get("vkf_device", ""):
            return "vkf-bench ran on '%s', not llvmpipe" % row.get("vkf_device")
        if side == "llama.cpp-cpu" and backend != "CPU":
            return "llama-bench ran on backend '%s', not CPU" % backend
    return None


def test_name(row):
    return "pp%d" % row["n_prompt"] if row["n_gen"] == 0 else "tg%d" % row["n_gen"]


def measure(run, args, tools, files, write):
    """Every run's rows, with the round, side, file, the load average before it and its wall
    time; `write(runs, refused)` after each run, so that a stopped measurement leaves its rows."""
    runs, refused = [], {}
    for rnd in range(args.rounds):
        for t, path in files.items():
            if t in refused:
                continue
            # vkformer first in round 0: a file it refuses is then measured by no one.
            order = args.sides[rnd % len(args.sides):] + args.sides[:rnd % len(args.sides)]
            for side in order:
                load = os.getloadavg()
                cmd, env, cwd = side_command(args, side, tools, path)
                print("[round %d/%d] %s on %s, load %.2f" % (rnd + 1, args.rounds, side, t, load[0]), flush=True)
                began = time.monotonic()
                proc = run(cmd, env=env, cwd=cwd, capture=True, timeout=RUN_TIMEOUT_S)
                wall_s = time.monotonic() - began
                if run.dry_run:
                    continue
                if proc.returncode != 0 and side == "vkformer-vulkan" and rnd == 0:
                    refused[t] = "exit %d: %s" % (proc.returncode, proc.stderr.strip()[-2000:])
                    print("vkformer refuses %s: %s" % (t, refused[t]), flush=True)
                    write(runs, refused)
                    break
                if proc.returncode != 0:
                    sys.exit("%s on %s: exit %d\n%s" % (side, t, proc.returncode, proc.stderr[-3000:]))
                rows = json.loads(proc.stdout)
                wrong = check_rows(side, rows)
                if wrong:
                    sys.exit("%s on %s: %s" % (side, t, wrong))
                for row in rows:
                    print("  %s %.2f t/s" % (test_name(row), row["avg_ts"]), flush=True)
                runs.append({"round": rnd, "side": side, "type": t, "loadavg_before": list(load),
                             "wall_s": round(wall_s, 1), "command": run.log[-1], "rows": rows})
                write(runs, refused)
    return runs, refused


def summarize(args, runs):
    """{type: {test: {side: {median_ts, samples_ts}}, ratio...}} over all rounds."""
    table = {}
    for r in runs:
        for row in r["rows"]:
            cell = table.setdefault(r["type"], {}).setdefault(test_name(row), {}).setdefault(r["side"], [])
            cell.extend(row["samples_ts"])
    summary = {}
    for t, tests in table.items():
        for test, sides in tests.items():
            entry = {side: {"median_ts": statistics.median(s), "samples_ts": s} for side, s in sides.items()}
            ours = entry.get("vkformer-vulkan", {}).get("median_ts")
            for other in ("llama.cpp-vulkan", "llama.cpp-cpu"):
                if ours and other in entry:
                    entry["vkformer_over_" + other] = ours / entry[other]["median_ts"]
            summary.setdefault(t, {})[test] = entry
    return summary


def markdown(doc):
    """The result file's table and notes, from its JSON document (--render rewrites it alone)."""
    meta, summary, refused = doc["meta"], doc["summary"], doc["refused"]
    lines = ["# vkformer against llama.cpp on the same GGUF files", "",
             "BLOOM-560m-shaped random checkpoint (`vkf-make-checkpoint --preset bloom-560m --seed 5`), "
             "its F16 GGUF written with llama.cpp's gguf-py and quantized by llama.cpp's llama-quantize "
             "(`TYPE-pure`: `--pure`); llama.cpp %s (npm node-llama-cpp %s, prebuilt libraries), vkformer %s. "
             "t/s: median of %d alternating rounds x %d repetitions (each run after its own warm-up), "
             "the slowest and fastest sample in brackets." % (meta["llama_cpp"], VULKAN_PACKAGE[1],
                                                               meta["vkformer_commit"], meta["rounds_done"],
                                                               meta["reps"]), "",
             "Machine: %s, %d cores; Vulkan device of both Vulkan sides: %s. %s"
             % (meta["cpu"], meta["cores"], meta["device"], meta["load_note"]), "",
             "| file | test | vkformer (lavapipe) | llama.cpp Vulkan (lavapipe) | llama.cpp CPU (%d threads) "
             "| vkformer / llama.cpp Vulkan | vkformer / llama.cpp CPU |" % meta["threads"],
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]

    def cell(entry, side):
        if side not in entry:
            return "-"
        s = entry[side]["samples_ts"]
        return "%.2f (%.2f-%.2f)" % (entry[side]["median_ts"], min(s), max(s))

    def ratio(entry, key):
        return "%.2fx" % entry[key] if key in entry else "-"

    for t, tests in summary.items():
        for test, e in sorted(tests.items(), key=lambda kv: kv[0][:2] != "pp"):
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                t, test, cell(e, "vkformer-vulkan"), cell(e, "llama.cpp-vulkan"), cell(e, "llama.cpp-cpu"),
                ratio(e, "vkformer_over_llama.cpp-vulkan"), ratio(e, "vkformer_over_llama.cpp-cpu")))
    for t, message in refused.items():
        first, last = message.splitlines()[0], message.splitlines()[-1]
        shown = first if first == last else "%s ... %s" % (first, last)
        lines += ["", "%s: not measured, vkf-bench llama did not run the file: `%s`" % (t, shown)]
    if refused:
        lines += ["", "To measure it once vkformer reads it: `%s`" % meta["pending"]]
    lines += ["", "Command: `%s`" % meta["command"], "",
              "Each side's command in the first round (every run's is in the JSON file's `runs`):", ""]
    lines += ["    " + c for c in meta["example_commands"]]
    return "\n".join(lines) + "\n"


def cpu_name():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return ""


def build_commit(runs, vkformer):
    """The commit each tool was built from, as its rows say (not this checkout's HEAD)."""
    return next((row.get("build_commit") for r in runs for row in r["rows"]
                 if (r["side"] == "vkformer-vulkan") == vkformer), "?")


def write_results(args, argv, started, runs, refused):
    summary = summarize(args, runs)
    loads = [r["loadavg_before"][0] for r in runs]
    device = next((row.get("vkf_device") for r in runs for row in r["rows"] if row.get("vkf_device")), "?")
    load_note = ("The machine was shared with other engineers' builds while this ran: 1-minute load average "
                 "%.2f at the start, %.2f to %.2f (median %.2f) before the runs; the rounds alternate the "
                 "sides so that the load falls on each alike." % (started[0], min(loads), max(loads),
                                                                  statistics.median(loads))) if loads else ""
    name = args.name or "lavapipe-%s-bloom-560m-vs-llama.cpp" % datetime.date.today().isoformat()
    # A name of its own: the rerun must not overwrite this file.
    again = ["--types", ",".join(refused), "--rounds", str(args.rounds), "--reps", str(args.reps), "--name",
             "%s-%s" % (name, "-".join(refused))]
    meta = {"command": " ".join(shlex.quote(a) for a in [sys.executable, "scripts/llama_speed_compare.py"] + argv),
            "pending": " ".join([sys.executable, "scripts/llama_speed_compare.py"] + again),
            "rounds": args.rounds, "reps": args.reps, "threads": args.threads,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "cpu": cpu_name(), "cores": os.cpu_count(), "device": device,
            "vkformer_commit": build_commit(runs, True), "llama_cpp": build_commit(runs, False),
            "rounds_done": len({r["round"] for r in runs}),
            "load_start": list(started), "load_before_runs": loads, "load_note": load_note,
            "example_commands": list(dict.fromkeys(r["command"] for r in runs if r["round"] == 0))}
    os.makedirs(args.out_dir, exist_ok=True)
    doc = {"meta": meta, "summary": summary, "refused": refused, "runs": runs}
    with open(os.path.join(args.out_dir, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(args.out_dir, name + ".md"), "w", encoding="utf-8") as f:
        f.write(markdown(doc))
    print("wrote %s.json and .md in %s" % (name, args.out_dir), flush=True)


def render(path):
    if not path.endswith(".json"):
        sys.exit("--render needs a result file NAME.json, not '%s'" % path)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    with open(path[:-len(".json")] + ".md", "w", encoding="utf-8") as f:
        f.write(markdown(doc))
    print("wrote %s" % (path[:-len(".json")] + ".md"))
    return 0


def main(argv):
    args = parse_args(argv)
    if args.render:
        return render(args.render)
    if not args.dry_run and (sys.platform != "linux" or platform.machine() != "x86_64"):
        sys.exit("llama.cpp's prebuilt libraries come for Linux x86-64 only")
    try:
        import numpy  # noqa: F401  (gguf-py's)
    except ImportError:
        if not args.dry_run:
            sys.exit("numpy is not installed for %s (Debian's python3-numpy is /usr/bin/python3's)" % sys.executable)
    run = Runner(args.dry_run)
    started = os.getloadavg()
    source, tools = prepare_tools(run, args.work)
    files = prepare_files(run, args, source, tools["llama-quantize"])
    if args.dry_run:
        measure(run, args, tools, files, lambda runs, refused: None)
        return 0
    measure(run, args, tools, files, lambda runs, refused: write_results(args, argv, started, runs, refused))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
