#!/usr/bin/env node
import '../dist/legatectl.js';
