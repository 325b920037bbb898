"""What a run leaves and how every tool reads it: the record (schema, fingerprint, writer, reader), its statuses and
codes as types, the Measurement view, the words for metrics and changes, statistics, selection and the HTML look.
Imports results/, config/ and plumbing/, never a tool (docs/architecture.md, "Layout")."""
