"""Crash detection: the benchmark's evaluation task. Tasks are written from the
``notebooks`` records (:mod:`.tasks`, prompts in :mod:`.prompt`), detectors answer them
(:mod:`.detect`: an OpenAI-compatible endpoint, or the static :mod:`.baseline`), answers
are read and checked (:mod:`.predictions`), runs are voted into one answer per notebook
(:mod:`.votes`) and scored against the labels (:mod:`.metrics`, :mod:`.evaluate`). The
names and defaults its options offer (formats, layouts, bootstrap) are in :mod:`.names`.
Builds on :mod:`junobench.data`; optionally reads runtime information.
"""
