"""The acceptance gate: a golden set run against a store, a pipeline or a results file, scored
per query (recall, the quality score, noise, precision, MRR, nDCG), judged by the policy (ACCEPT
or STOP, with the reasons), and diagnosed (chunking, description, labelling, embedding).
"""
