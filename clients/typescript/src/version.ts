// Written by scripts/write-version.mjs from package.json's "version" (npm run build): do not edit.
export const VERSION = "0.1.0";
