"""The memoryd "memory curator" prompt: a value gate, then a rewrite of what passes it.

Every HTTP judge sends exactly this prompt so provider comparisons measure the model, not the
wording. `PROMPT_VERSION` goes into the judge response-cache key: bump it whenever the text or the
parsing changes, or cached verdicts from the old prompt would be replayed as if from the new one.
"""

from __future__ import annotations

PROMPT_VERSION = "memoryd-curator-v1"

SKIP_TOKEN = "SKIP"

SYSTEM_PROMPT = """\
You are the memory curator for an AI coding agent. You read one turn of a coding session (the \
user's request and the assistant's reply) and decide whether the reply holds anything worth \
remembering in a later session. Work in two stages.

Stage 1 - value gate.
Ask: is the assistant's text independently valuable technical information that a future session \
could use without having seen this conversation? Valuable information includes:
- architecture facts (how components fit together, what calls what);
- file locations and what lives in them;
- configuration values, flags, environment variables, versions, ports;
- API behaviours, signatures and their surprises;
- error patterns: a symptom together with its cause or fix;
- decisions together with their rationale;
- gotchas, pitfalls and constraints that are easy to get wrong.

It is NOT valuable, and you must answer SKIP, when the text is:
- procedural narration of what the assistant is doing or will do;
- navigation such as "Let me check...", "Now I'll look at...", "Reading the file...";
- status updates ("Done.", "Tests pass.", "I've made the change.");
- generic explanations without specific anchors (no concrete file, name, value or behaviour \
of this project);
- a restatement of the user's requirements or of the task;
- a description of process rather than of findings.

If the text fails the gate, reply with exactly SKIP and nothing else: no punctuation, no \
explanation.

Stage 2 - rewrite.
Otherwise, rewrite the valuable information as a memory of 2 to 6 sentences of direct, \
declarative prose. Keep every identifier exactly as written: file paths, function, class and \
variable names, commands, configuration keys and values, error messages and version numbers. \
State facts, not the conversation: no "the assistant found", no "the user asked", no greetings, \
no headings, no bullet points, no markdown. Drop anything that would not help a future session.

Reply with either exactly SKIP or the memory text, and nothing else."""

USER_TEMPLATE = """\
<user_prompt>
{user_prompt}
</user_prompt>

<assistant_response>
{assistant_text}
</assistant_response>

Apply the value gate to the assistant response above. Reply SKIP, or the rewritten memory."""


def build_messages(user_prompt: str, assistant_text: str) -> tuple[str, str]:
    """(system, user) messages for one turn; the user prompt is context, the reply is judged."""
    user = USER_TEMPLATE.format(
        user_prompt=user_prompt.strip(), assistant_text=assistant_text.strip()
    )
    return SYSTEM_PROMPT, user


def parse_verdict(text: str) -> tuple[bool, str | None]:
    """(skip, memory): SKIP when the trimmed reply is `SKIP` or starts with `SKIP` + space/newline.

    Matching is case-sensitive on purpose. The prompt demands the literal upper-case token, and a
    case-insensitive match would silently drop genuine memories that merely begin with the word
    ("Skip lists in src/index.rs ...", "skip_validation in settings.py ..."). `SKIPPED` or `SKIP.`
    is therefore a memory, not a skip. An empty reply is neither: it gives (False, None).
    """
    trimmed = text.strip()
    if trimmed == SKIP_TOKEN:
        return True, None
    if trimmed.startswith(SKIP_TOKEN) and trimmed[len(SKIP_TOKEN)] in " \n\r":
        return True, None
    if not trimmed:
        return False, None
    return False, trimmed
