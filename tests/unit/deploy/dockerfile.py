"""A small reader for our Dockerfile: instructions with continuations joined, heredocs kept
(podman 4.3, which `make image` builds with, reads none, so the file has none)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "Dockerfile"
_HEREDOC = re.compile(r"<<-?['\"]?(\w+)['\"]?")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    heredoc: str | None  # the body of a `<<EOF` document, if any
    line: int


def parse(text: str) -> list[Instruction]:
    out: list[Instruction] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        keyword, _, args = line.strip().partition(" ")
        body = None
        match = _HEREDOC.search(args)
        if match:
            end = lines.index(match.group(1), i)
            body = "\n".join(lines[i:end]) + "\n"
            i = end + 1
        out.append(Instruction(keyword.upper(), args.strip(), body, start + 1))
    return out


def instructions() -> list[Instruction]:
    return parse(DOCKERFILE.read_text(encoding="utf-8"))


def final_stage() -> list[Instruction]:
    """The instructions of the last stage, from its FROM on: what the image is."""
    all_ins = instructions()
    start = max(i for i, ins in enumerate(all_ins) if ins.keyword == "FROM")
    return all_ins[start:]


HEALTHCHECK_SOURCE = REPO / "image" / "gpu-guardian-healthcheck"


def healthcheck_script() -> str:
    """The health-check program the image copies to /usr/local/bin."""
    for ins in final_stage():
        if ins.keyword == "COPY" and "/usr/local/bin/gpu-guardian-healthcheck" in ins.args:
            assert "image/gpu-guardian-healthcheck" in ins.args, ins.args
            return HEALTHCHECK_SOURCE.read_text(encoding="utf-8")
    raise AssertionError("the Dockerfile copies no gpu-guardian-healthcheck")
