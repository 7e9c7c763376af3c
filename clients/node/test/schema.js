// The protocol/ folder for the tests: a small JSON Schema validator (the keywords
// protocol/schema uses; an unknown keyword is a failure, not a pass) and the transcripts.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO } from './loopback.js';

export const PROTOCOL = join(REPO, 'protocol');
const SUPPORTED = new Set(['$schema', '$id', '$defs', '$ref', 'title', 'description', 'type', 'const', 'enum',
  'properties', 'required', 'additionalProperties', 'items', 'oneOf', 'anyOf', 'allOf', 'not', 'minimum', 'maximum',
  'minLength', 'pattern', 'default']);

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]);
}

export function loadSchemas() {
  const root = join(PROTOCOL, 'schema');
  return Object.fromEntries(walk(root).filter((p) => p.endsWith('.schema.json'))
    .map((p) => [relative(root, p), JSON.parse(readFileSync(p, 'utf8'))]));
}

const typeOf = (v) => v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
function isType(v, t) {
  if (t === 'integer') return Number.isInteger(v);
  if (t === 'number') return typeof v === 'number';
  return typeOf(v) === t;
}
const equal = (a, b) => JSON.stringify(a) === JSON.stringify(b);

export class Schemas {
  constructor() {
    this.documents = loadSchemas();
  }

  problems(value, name) {
    if (!this.documents[name]) return [`no schema ${name}`];
    const problems = [];
    this.#check(value, this.documents[name], name, '$', problems);
    return problems;
  }

  #resolve(ref, document) {
    const [file, fragment] = ref.split('#');
    let target = document;
    if (file) {
      const parts = document.split('/').slice(0, -1);
      for (const piece of file.split('/')) {
        if (piece === '..') parts.pop();
        else if (piece !== '.') parts.push(piece);
      }
      target = parts.join('/');
    }
    let node = this.documents[target];
    for (const key of (fragment || '').split('/').filter(Boolean)) node = node?.[key];
    return node === undefined ? null : [node, target];
  }

  #check(value, schema, document, path, problems) {
    if (schema === false) return problems.push(`${path}: not allowed`);
    if (typeof schema !== 'object' || schema === null) return;
    // `x-` keywords are annotations for generators (JSON Schema ignores unknown keywords).
    for (const key of Object.keys(schema)) {
      if (!SUPPORTED.has(key) && !key.startsWith('x-')) problems.push(`${path}: unsupported schema keyword ${key}`);
    }
    if (schema.$ref) {
      const resolved = this.#resolve(schema.$ref, document);
      if (!resolved) return problems.push(`${path}: unresolvable $ref ${schema.$ref}`);
      this.#check(value, resolved[0], resolved[1], path, problems);
    }
    if (schema.type !== undefined) {
      const allowed = Array.isArray(schema.type) ? schema.type : [schema.type];
      if (!allowed.some((t) => isType(value, t))) return problems.push(`${path}: ${typeOf(value)} is not ${allowed.join(' or ')}`);
    }
    if ('const' in schema && !equal(schema.const, value)) problems.push(`${path}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`);
    if (schema.enum && !schema.enum.some((c) => equal(c, value))) problems.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
    if (typeof value === 'number') {
      if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${path}: ${value} < ${schema.minimum}`);
      if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${path}: ${value} > ${schema.maximum}`);
    }
    if (typeof value === 'string' && schema.minLength !== undefined && [...value].length < schema.minLength) problems.push(`${path}: shorter than ${schema.minLength}`);
    if (typeof value === 'string' && schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) problems.push(`${path}: does not match ${schema.pattern}`);
    if (typeOf(value) === 'object') {
      const properties = schema.properties || {};
      for (const required of schema.required || []) if (!(required in value)) problems.push(`${path}: missing ${required}`);
      for (const [key, child] of Object.entries(value)) {
        if (key in properties) this.#check(child, properties[key], document, `${path}.${key}`, problems);
        else if (schema.additionalProperties === false) problems.push(`${path}: unexpected field ${key}`);
        else if (schema.additionalProperties !== undefined) this.#check(child, schema.additionalProperties, document, `${path}.${key}`, problems);
      }
    }
    if (Array.isArray(value) && schema.items) value.forEach((e, i) => this.#check(e, schema.items, document, `${path}[${i}]`, problems));
    for (const sub of schema.allOf || []) this.#check(value, sub, document, path, problems);
    const passes = (sub) => { const p = []; this.#check(value, sub, document, path, p); return p; };
    if (schema.anyOf && !schema.anyOf.some((sub) => passes(sub).length === 0)) problems.push(`${path}: matches none of anyOf`);
    if (schema.oneOf) {
      const failures = schema.oneOf.map(passes);
      const passing = failures.filter((p) => p.length === 0).length;
      if (passing !== 1) problems.push(`${path}: matches ${passing} of oneOf (exactly one needed): ${failures.map((f) => f.join('; ')).join(' | ')}`);
    }
    if (schema.not && passes(schema.not).length === 0) problems.push(`${path}: matches a schema it must not`);
  }
}

export function outgoingSchema(message, requestMethod) {
  if (typeof message.method === 'string') return `events/${message.method.replaceAll('/', '-')}.schema.json`;
  if ('error' in message) return 'error-response.schema.json';
  if ('result' in message && requestMethod) return `results/${requestMethod}.schema.json`;
  return null;
}

export function incomingSchema(message) {
  if (typeof message.method !== 'string') return null;
  return `requests/${message.method === '$/cancelRequest' ? 'cancelRequest' : message.method}.schema.json`;
}

export function transcriptNames() {
  return readdirSync(join(PROTOCOL, 'transcripts')).filter((n) => n.endsWith('.txt')).sort();
}

export function loadTranscript(name, substitutions) {
  const text = readFileSync(join(PROTOCOL, 'transcripts', name), 'utf8').replace(/\{\{(\w+)\}\}/g, (_, k) => substitutions[k]);
  const transcript = { name, args: [], steps: [], optional: [], exitStatus: null, contentLength: false };
  for (const line of text.split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    if (line.startsWith('!args ')) transcript.args = line.slice(6).split(/\s+/).filter(Boolean);
    else if (line.trim() === '!framing content-length') transcript.contentLength = true;
    else if (line.startsWith('-->! ')) transcript.steps.push({ send: line.slice(5), invalid: true, expected: [] });
    else if (line.startsWith('--> ')) transcript.steps.push({ send: line.slice(4), invalid: false, expected: [] });
    else if (line.startsWith('<-- ')) transcript.steps.at(-1).expected.push(JSON.parse(line.slice(4)));
    else if (line.startsWith('<~~ ')) transcript.optional.push(JSON.parse(line.slice(4)));
    else if (line.trim() === '!eof') transcript.steps.push({ send: null, invalid: false, expected: [] });
    else if (line.startsWith('!exit ')) transcript.exitStatus = Number(line.slice(6));
    else throw new Error(`${name}: cannot read the line ${JSON.stringify(line)}`);
  }
  return transcript;
}

export function matches(pattern, value) {
  if (pattern === '*') return true;
  if (Array.isArray(pattern)) {
    if (!Array.isArray(value) || value.length !== pattern.length) return false;
    const unused = value.map((_, i) => i);
    for (const sub of pattern) {
      const found = unused.findIndex((i) => matches(sub, value[i]));
      if (found < 0) return false;
      unused.splice(found, 1);
    }
    return true;
  }
  if (pattern !== null && typeof pattern === 'object') {
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      && Object.entries(pattern).every(([k, v]) => k in value && matches(v, value[k]));
  }
  return pattern === value;
}

export function orderKey(message) {
  if (message?.params && 'token' in message.params) return `token:${JSON.stringify(message.params.token)}`;
  if (message && 'id' in message) return `id:${JSON.stringify(message.id)}`;
  return 'global';
}
