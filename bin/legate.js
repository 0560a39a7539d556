#!/usr/bin/env node
import '../dist/legate.js';
