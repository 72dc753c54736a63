// The export format, version 2 (docs/export-import.md#the-format-version-2): one JSON object a line, each
// with a `type`. The format's executable specification is the service's memories/transfer/export_format.py
// (its SCHEMAS); the OpenAPI schema only says "application/x-ndjson". These types are the lines an export
// writes, every field present (a hand-written import file may leave out the ones with defaults), and
// tests/clients/test_typescript_export_types.py holds them to that module: the same fields for each type,
// the same enumerated values, and a real export type-checks against them.
export {};
