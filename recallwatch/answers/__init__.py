"""Answer-level evaluation of a RAG assistant: is each answer backed by its contexts
(faithfulness), does it address the question (relevance), does it agree with the right answer
(correctness), did the contexts hold what was needed (context precision and recall), and, when
an answer is wrong, was it the retrieval or the generation.

* :mod:`~recallwatch.answers.text` — statements, numbers and the units of a passage;
* :mod:`~recallwatch.answers.judges` — the two judges: offline (sentence embeddings and the
  numbers, no LLM) and an LLM behind an OpenAI-compatible chat endpoint;
* :mod:`~recallwatch.answers.trust` — a judge is used only after its agreement with answers
  people labelled has been measured (Cohen's kappa), and refused below a floor;
* :mod:`~recallwatch.answers.measures` — the measures of one answer;
* :mod:`~recallwatch.answers.generate` — the user's generator (``python:MODULE:ATTR`` or a chat
  endpoint), so the gate can also answer from the expected chunks (the oracle context);
* :mod:`~recallwatch.answers.gate` — the gate's answer step: answers judged, failures named,
  the policy's answer rules applied.

The definitions are in docs/metrics.md ("Answers").
"""
