"""Ground truth: judgments from click models, their agreement with human labels, and the
optional LLM judge. Nothing here is imported by ``import recallwatch``."""
