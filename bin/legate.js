#!/usr/bin/env node
import { ensureSupportedNode } from './node-check.js';

await ensureSupportedNode(import.meta.filename);
await import('../dist/legate.js');
