#!/usr/bin/python3
"""Token ids for vkf-run --prompt-ids / --prompt-ids-file, or text for ids, with the
Python tokenizer (the one the model was trained with):

  python3 training/encode.py --tokenizer models/kjv-bloom/tokenizer.json --text "In the beginning God"
  python3 training/encode.py --tokenizer ... --file models/kjv-bloom/heldout.txt --max-tokens 600
  python3 training/encode.py --tokenizer ... --decode 77,114,262
"""

import argparse

import bpe


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokenizer", required=True, help="tokenizer.json written by train_kjv_bloom.py")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--text")
    source.add_argument("--file", help="a UTF-8 text file")
    source.add_argument("--decode", help="comma-separated ids to turn back into text")
    p.add_argument("--max-tokens", type=int, help="keep only the first N ids")
    args = p.parse_args()
    tokenizer = bpe.Tokenizer.load(args.tokenizer)
    if args.decode is not None:
        print(tokenizer.decode([int(i) for i in args.decode.split(",")]))
        return
    text = args.text
    if args.file is not None:
        with open(args.file, encoding="utf-8") as f:
            text = f.read()
    print(",".join(map(str, tokenizer.encode(text)[:args.max_tokens])))


if __name__ == "__main__":
    main()
