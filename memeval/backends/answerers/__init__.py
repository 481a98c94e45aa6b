"""Answerers of memory QA: a question and the memories a system recalled → an answer."""
