"""Slack's message-content checks: Block Kit limits and the text/blocks requirement.

Slack rejects a bad ``blocks`` array as a whole with ``invalid_blocks`` and
explains each problem as ``[ERROR] <why> [json-pointer:/blocks/N/...]`` in
``response_metadata.messages``. The checks here cover the limits a notifier can
hit (api.slack.com/reference/block-kit), not the whole schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from testbed.slackapi.errors import ApiError

MAX_BLOCKS = 50
MAX_HEADER_TEXT = 150
MAX_SECTION_TEXT = 3000
MAX_SECTION_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_BLOCK_ID = 255
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_MARKDOWN_TEXT = 12000
# Slack truncates the top-level text beyond this (it does not reject it).
MAX_MESSAGE_TEXT = 40000

_BLOCK_TYPES = frozenset(
    {
        "actions",
        "context",
        "divider",
        "file",
        "header",
        "image",
        "input",
        "markdown",
        "rich_text",
        "section",
        "video",
    }
)
_TEXT_TYPES = frozenset({"plain_text", "mrkdwn"})


@dataclass(frozen=True)
class Content:
    """The validated content of one message."""

    text: str
    blocks: list[dict[str, Any]]
    attachments: list[dict[str, Any]]


def _json_list(value: Any, field: str, format_error: str) -> list[Any]:
    """Accept a list, or (as form-encoded calls send it) a JSON string holding one."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ApiError(format_error, messages=[f"[ERROR] {field} is not valid JSON"]) from None
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ApiError(format_error, messages=[f"[ERROR] {field} must be an array of objects"])
    return value


def _check_text_object(
    obj: Any, pointer: str, limit: int, *, plain_only: bool = False
) -> list[str]:
    if not isinstance(obj, dict):
        return [f"[ERROR] must be a text object [json-pointer:{pointer}]"]
    kind = obj.get("type")
    allowed = {"plain_text"} if plain_only else _TEXT_TYPES
    if kind not in allowed:
        want = " or ".join(sorted(allowed))
        return [f"[ERROR] must be of type {want} [json-pointer:{pointer}/type]"]
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        return [f"[ERROR] must be more than 0 characters [json-pointer:{pointer}/text]"]
    if len(text) > limit:
        return [f"[ERROR] must be less than {limit + 1} characters [json-pointer:{pointer}/text]"]
    return []


def _check_block(block: dict[str, Any], pointer: str) -> list[str]:
    kind = block.get("type")
    if kind not in _BLOCK_TYPES:
        return [f"[ERROR] unsupported type: {kind} [json-pointer:{pointer}/type]"]
    problems: list[str] = []
    block_id = block.get("block_id")
    if isinstance(block_id, str) and len(block_id) > MAX_BLOCK_ID:
        problems.append(
            f"[ERROR] must be less than {MAX_BLOCK_ID + 1} characters "
            f"[json-pointer:{pointer}/block_id]"
        )
    if kind == "header":
        problems += _check_text_object(
            block.get("text"), f"{pointer}/text", MAX_HEADER_TEXT, plain_only=True
        )
    elif kind == "section":
        problems += _check_section(block, pointer)
    elif kind == "markdown":
        text = block.get("text")
        if not isinstance(text, str) or len(text) > MAX_MARKDOWN_TEXT:
            problems.append(
                f"[ERROR] must be a string of at most {MAX_MARKDOWN_TEXT} characters "
                f"[json-pointer:{pointer}/text]"
            )
    elif kind in ("context", "actions"):
        limit = MAX_CONTEXT_ELEMENTS if kind == "context" else MAX_ACTIONS_ELEMENTS
        elements = block.get("elements")
        if not isinstance(elements, list) or not elements:
            problems.append(f"[ERROR] must provide elements [json-pointer:{pointer}/elements]")
        elif len(elements) > limit:
            problems.append(
                f"[ERROR] no more than {limit} items allowed [json-pointer:{pointer}/elements]"
            )
    return problems


def _check_section(block: dict[str, Any], pointer: str) -> list[str]:
    text, fields = block.get("text"), block.get("fields")
    if text is None and fields is None:
        return [f"[ERROR] must provide text or fields [json-pointer:{pointer}]"]
    problems: list[str] = []
    if text is not None:
        problems += _check_text_object(text, f"{pointer}/text", MAX_SECTION_TEXT)
    if fields is not None:
        if not isinstance(fields, list) or len(fields) > MAX_SECTION_FIELDS:
            problems.append(
                f"[ERROR] no more than {MAX_SECTION_FIELDS} items allowed "
                f"[json-pointer:{pointer}/fields]"
            )
        else:
            for index, field in enumerate(fields):
                problems += _check_text_object(field, f"{pointer}/fields/{index}", MAX_FIELD_TEXT)
    return problems


def check_blocks(blocks: list[dict[str, Any]]) -> None:
    """Raise ``invalid_blocks`` with Slack's explanations if ``blocks`` breaks a limit."""
    problems: list[str] = []
    if len(blocks) > MAX_BLOCKS:
        problems.append(f"[ERROR] no more than {MAX_BLOCKS} items allowed [json-pointer:/blocks]")
    for index, block in enumerate(blocks):
        problems += _check_block(block, f"/blocks/{index}")
    if problems:
        raise ApiError("invalid_blocks", errors=problems, messages=problems)


def parse_content(args: dict[str, Any]) -> Content:
    """Validate the ``text``/``blocks``/``attachments`` arguments of a message call.

    Raises ``no_text`` when none of them carries content, as Slack does.
    """
    blocks = _json_list(args.get("blocks"), "blocks", "invalid_blocks_format")
    attachments = _json_list(args.get("attachments"), "attachments", "invalid_attachments")
    text = args.get("text")
    if text is None:
        text = ""
    if not isinstance(text, str):
        text = str(text)
    if not text.strip() and not blocks and not attachments:
        raise ApiError("no_text")
    check_blocks(blocks)
    return Content(text=text[:MAX_MESSAGE_TEXT], blocks=blocks, attachments=attachments)
