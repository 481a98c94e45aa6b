"""The prompts of memory QA's LLM answerer and grader (docs/memory_qa.md shows them whole).

Both follow mem0's LoCoMo evaluation: the answerer gets the recalled memories with their dates
and is asked for a short answer, resolving relative times from the dates and preferring the
newer memory where two disagree; the grader labels an answer CORRECT or WRONG against the gold
answer, generously (the same topic, or the same date in any format, is correct), and returns the
label as JSON. The wording is memeval's; the rules are mem0's. One rule is added to the
answerer's: to say "No information available" when the memories do not hold the answer, the
phrase LoCoMo's scoring looks for on its adversarial questions.
"""

from __future__ import annotations

ANSWER_SYSTEM = ("You answer questions about past conversations using only the memories you are "
                 "given.")
ANSWER_USER = """Memories (newest information wins where two disagree; each is dated when known):
{memories}

Rules:
1. Answer from the memories only, in fewer than six words.
2. Use the dates: turn relative times ("last year", "two weeks ago") into the actual date, month
   or year they mean, and answer with that, not with the relative phrase.
3. Names in the memories may be people the speakers talk about: answer about whom the question
   asks.
4. If the memories do not contain the answer, reply exactly: No information available

Question: {question}
Answer:"""

GRADE_SYSTEM = "You grade answers to questions about past conversations."
GRADE_USER = """Label the generated answer CORRECT or WRONG against the gold answer.

The question asks about something said in earlier conversations. The gold answer is short; the
generated answer may be longer. Be generous: if the generated answer is about the same thing as
the gold answer, it is CORRECT. For a question about time, it is CORRECT if it names the same
date or period as the gold answer, in any format or as a relative time that resolves to it.
Otherwise it is WRONG.

Question: {question}
Gold answer: {gold}
Generated answer: {answer}

Give one short sentence of reasoning, then the label as JSON: {{"label": "CORRECT"}} or
{{"label": "WRONG"}}. Never write both labels."""
