"""What every reader and writer of junobench promises, each rule defined once.

- :mod:`~junobench.safety.atomic`: a write is whole or absent: files and folders are
  written beside their place and moved in (with ``fsync``), with the umask's permissions;
  a folder swap leaves the old or the new one at the path at every instant.
- :mod:`~junobench.safety.paths`: every path built from data stays inside the folder the
  user named; links are never followed out of it; only regular files are read.
- :mod:`~junobench.safety.text`: text stays text: no spreadsheet formulas in written
  tables, no control characters to the terminal, escaped Markdown/HTML, checked URLs.
- :mod:`~junobench.safety.archives`: archives (and xlsx files, which are zip archives)
  are checked before anything is decompressed: no paths out, no links out, no bombs.
- :mod:`~junobench.safety.env`: notebook kernels see no credentials.
"""
