#!/usr/bin/env python3
"""The longest signatures in the crate's rendered docs, as a reader sees them.

    scripts/signature-lengths.py [DOC_DIR] [--limit N]

Reads every HTML page rustdoc wrote for the crate (`cargo doc --no-deps -p
bounded-buffered`; DOC_DIR defaults to target/doc/bounded_buffered), and
measures each signature as rendered, where clause included: item declarations
(structs, traits, functions, type aliases), impl headers and the methods,
associated types and constants inside them; the trait implementations the
crate writes and the auto-trait ones rustdoc derives for its types (`Send`,
`Sync`, `Unpin`; the unwind-safety ones are listed apart, not limited).
Blanket implementations of other crates' traits are not the crate's
signatures and are skipped.

Prints the longest few; with --limit N, fails (exit 1) if any is longer than N
characters or shows a projection through the crate's internal traits
(`<P as Policy<S>>::...`) or pin-project internals (`__Origin`,
`PinnedFieldsOf`).
"""

import html.parser
import os
import re
import sys

# The item wrappers `Keyed`, `Weighted`, `Deadline` and `Tenanted` are futures around the caller's
# future: they must pin-project it, which safe Rust gets only from a
# pin-projection macro, and rustdoc shows the `Unpin` impl that macro writes.
# (The streams box their source instead, once per stream; a wrapper made per
# item cannot.) Listed, not failed.
KNOWN = re.compile(r"Unpin for (Keyed|Weighted|Deadline|Tenanted)<")

FORBIDDEN = [
    (re.compile(r"as (Policy|Clocking|Expiry|Run|Admission|Shedding)\b"), "a projection through an internal trait"),
    (re.compile(r"__Origin|PinnedFieldsOf"), "pin-project internals"),
]


class Signatures(html.parser.HTMLParser):
    """Collects the text of every `code-header` and `item-decl` element, with the
    section of the page it sits in."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.capture_depth = None
        self.text = []
        self.section = None
        self.section_depth = None
        self.found = []  # (section, text)

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "input", "meta", "link", "wbr", "hr"):
            return
        self.depth += 1
        attrs = dict(attrs)
        ident = attrs.get("id", "")
        classes = attrs.get("class", "").split()
        if ident.endswith("implementations-list"):
            self.section, self.section_depth = ident, self.depth
        if self.capture_depth is None and (
            "code-header" in classes or ("item-decl" in classes)
        ):
            self.capture_depth = self.depth
            self.declaration = "item-decl" in classes
            self.text = []

    def handle_endtag(self, tag):
        if tag in ("br", "img", "input", "meta", "link", "wbr", "hr"):
            return
        if self.capture_depth == self.depth:
            text = " ".join("".join(self.text).split())
            if self.declaration:
                # A struct's or trait's declaration: its header; the fields and
                # methods in its body are measured as their own signatures.
                text = text.split(" {", 1)[0]
            self.found.append((self.section, text))
            self.capture_depth = None
        if self.section_depth == self.depth:
            self.section, self.section_depth = None, None
        self.depth -= 1

    def handle_data(self, data):
        if self.capture_depth is not None:
            self.text.append(data)


def main():
    args = sys.argv[1:]
    limit = None
    if "--limit" in args:
        at = args.index("--limit")
        limit = int(args[at + 1])
        del args[at : at + 2]
    root = args[0] if args else "target/doc/bounded_buffered"
    if not os.path.isdir(root):
        sys.exit(f"no docs at {root}: run `cargo doc --no-deps -p bounded-buffered` first")
    signatures = {}
    for directory, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".html") or name in ("all.html", "sidebar-items.html"):
                continue
            path = os.path.join(directory, name)
            with open(path, encoding="utf-8") as page:
                parser = Signatures()
                parser.feed(page.read())
            for section, text in parser.found:
                if section == "blanket-implementations-list" or not text:
                    continue
                if section == "synthetic-implementations-list" and re.search(
                    r"\b(Ref)?UnwindSafe for|\bFreeze for|\bUnsafeUnpin for", text
                ):
                    continue
                signatures.setdefault(text, os.path.relpath(path, root))
    ranked = sorted(signatures.items(), key=lambda item: -len(item[0]))
    print(f"{len(ranked)} signatures; the longest:")
    for text, page in ranked[:8]:
        print(f"  {len(text):4} {page}: {text}")
    failures = []
    for text, page in ranked:
        if limit is not None and len(text) > limit:
            failures.append(f"{len(text)} characters (limit {limit}) in {page}: {text}")
        for pattern, what in FORBIDDEN:
            if pattern.search(text):
                if KNOWN.search(text):
                    print(f"  known: {what} in {page}: {text}")
                    continue
                failures.append(f"{what} in {page}: {text}")
    if limit is not None:
        for failure in failures:
            print("FAIL:", failure)
        if failures:
            sys.exit(1)
        print(f"every signature within {limit} characters, none showing internals")


if __name__ == "__main__":
    main()
