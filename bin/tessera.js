#!/usr/bin/env node
// Entry point for the `tessera` binary. Tessera's sources are TypeScript run directly
// by Node 24's type stripping, so this shim only loads them (see package.json engines).
import "../src/cli/main.ts"
