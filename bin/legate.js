#!/usr/bin/env node
import { ensureSupportedNode } from './node-check.js';

ensureSupportedNode(import.meta.filename);
await import('../dist/legate.js');
