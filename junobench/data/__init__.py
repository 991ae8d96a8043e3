"""Snapshot → records: everything between a folder in the published layout and the typed
``cases`` and ``notebooks`` records.

It owns the layout contract (:mod:`.layout`), finding a snapshot (:mod:`.snapshot`: a
local folder, the bundled sample or a Hub download), reading the description and
diagnosis tables (:mod:`.tables`), parsing notebooks and execution orders
(:mod:`.notebook`), one case folder → one record (:mod:`.cases`, :mod:`.metadata`), the
parallel preparation (:mod:`.preparation`) and the build report (:mod:`.report`), the
``datasets`` builder (:mod:`.records`), preparing and caching the records
(:mod:`.build`, :mod:`.cache`), reading prepared records back without ``datasets``
(:mod:`.prepared`), reading an export's records (:mod:`.export`: the Hub layout
:mod:`junobench.hub` writes), the label filters (:mod:`.filters`), copying cases into
a new snapshot (:mod:`.checkout`) and checking one (:mod:`.validate`). Nothing here
imports the Hub side, detection, verify or the CLI.
"""
