"""Diagnosis: judging what a crash detector says about *why* a notebook crashes. Human
judgments are read and written (:mod:`.judgments`), sheets for raters made and read back
(:mod:`.annotation`), two raters compared (:mod:`.agreement`), an LLM judge run as
CRANE-LLM ran it (:mod:`.judge`; in Inspect, :mod:`.inspect_judge`), and judged settings
scored end to end (:mod:`.endtoend`). Builds on :mod:`junobench.detection`, whose
metrics, intervals and paired tests it applies to judged decisions.
"""
