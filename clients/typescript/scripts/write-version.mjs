// Writes src/version.ts from package.json's "version", the one place the TypeScript client's version is
// written (npm version keeps package-lock.json in step); `npm run build` runs it first, and
// tests/clients/test_sdk_versions.py fails when a copy differs.
import { readFileSync, writeFileSync } from "node:fs";

const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const text = `// Written by scripts/write-version.mjs from package.json's "version" (npm run build): do not edit.\nexport const VERSION = ${JSON.stringify(version)};\n`;
writeFileSync(new URL("../src/version.ts", import.meta.url), text);
