"""The training corpus: the King James Bible from Debian's bible-kjv packages.

Source: the program `bible` (package bible-kjv, GPL-2+) reading its data (package
bible-kjv-text); the KJV text itself is public domain (its Debian copyright file says
the copyright expired long ago). `bible -l0 gen1:1-rev22:21` prints all 66 books,
about 4.3 MB, as

    <blank line>
    Genesis 1
    <blank line>
      1 In the beginning God created the heaven and the earth.
      2 And the earth was without form, ...

Normalised format (what the tokenizer and the model see), one chapter per block:

    Genesis 1
    1 In the beginning God created the heaven and the earth.
    2 And the earth was without form, ...

    Genesis 2
    1 Thus the heavens and the earth were finished, ...

i.e. the heading line, then one line per verse with its number and no indentation,
and one blank line between chapters. The text ends with a newline.

Split: the books Ezra, Nehemiah, Esther and Job (contiguous in the canon, about 5% of
the text: lists and narrative plus poetry) are held out; they never enter tokenizer or
model training. The training text is everything before them followed by everything
after them.
"""

import re
import subprocess

HELDOUT_BOOKS = ("Ezra", "Nehemiah", "Esther", "Job")

# A chapter heading: a book name (possibly "1 Kings", "Song of Solomon") and a number.
_HEADING = re.compile(r"^((?:[123] )?[A-Z][A-Za-z ]*) (\d+)$")
_VERSE = re.compile(r"^ +(\d+ .*)$")


def dump_bible():
    """The whole KJV as the `bible` program prints it."""
    out = subprocess.run(["bible", "-l0", "gen1:1-rev22:21"], check=True, capture_output=True)
    return out.stdout.decode("utf-8")


def parse_chapters(raw):
    """[(book, heading line, [verse lines])] in canon order."""
    chapters = []
    for line in raw.split("\n"):
        if not line.strip():
            continue
        heading = _HEADING.match(line)
        if heading:
            chapters.append((heading.group(1), line, []))
            continue
        verse = _VERSE.match(line)
        if verse is None or not chapters:
            raise ValueError(f"unexpected line in the bible dump: {line!r}")
        chapters[-1][2].append(verse.group(1))
    return chapters


def format_chapters(chapters):
    return "\n".join(heading + "\n" + "\n".join(verses) + "\n" for _, heading, verses in chapters)


def split_corpus(raw):
    """(train text, held-out text) in the normalised format."""
    chapters = parse_chapters(raw)
    held = [i for i, c in enumerate(chapters) if c[0] in HELDOUT_BOOKS]
    first, last = held[0], held[-1]
    # The held-out books must be one contiguous slice for "before + after" to be honest.
    assert held == list(range(first, last + 1)), "held-out books are not contiguous"
    train = chapters[:first] + chapters[last + 1:]
    return format_chapters(train), format_chapters(chapters[first:last + 1])
