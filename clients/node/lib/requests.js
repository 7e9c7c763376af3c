// The `download` request's params from the client's options, checked by the tables that
// scripts/generate-options.py writes from protocol/schema (lib/option-table.js): the ranges,
// choices and rules between options the worker checks too.
import { CACHE_POLICIES, CHOICE_DEFAULTS, CHROMA_SUBSAMPLINGS, CLIENT_DEFAULTS, DOWNLOAD_OPTIONS, FORMATS, PRIORITIES, RELATIONS } from './option-table.js';

export { CACHE_POLICIES, CHROMA_SUBSAMPLINGS, FORMATS, PRIORITIES };
export const PROTOCOL_VERSION = '1';

/** Options of the client's own, not sent. */
const CLIENT_ONLY = new Set(['token', 'signal']);
const DECODED = FORMATS.filter((format) => format !== 'original');
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex
const LINE_BREAK_OR_NUL = /[\r\n\0]/;

function range(rule) {
  const format = (n) => (n === undefined ? '' : n.toLocaleString('en-US'));
  return rule.min === undefined && rule.max === undefined ? '' : ` in ${format(rule.min)}…${format(rule.max)}`;
}

/** `value` as sent, or a TypeError naming `name`. */
function checked(name, value, rule) {
  switch (rule.kind) {
    case 'bool':
      if (typeof value !== 'boolean') throw new TypeError(`${name} must be true or false, not ${JSON.stringify(value)}`);
      return value;
    case 'int':
    case 'number': {
      const integer = rule.kind === 'int';
      if (typeof value !== 'number' || !Number.isFinite(value) || (integer && !Number.isInteger(value))
        || (rule.min !== undefined && value < rule.min) || (rule.max !== undefined && value > rule.max)) {
        throw new TypeError(`${name} must be ${integer ? 'an integer' : 'a number'}${range(rule)}, not ${JSON.stringify(value)}`);
      }
      return value;
    }
    case 'enum':
      if (!rule.choices.includes(value)) throw new TypeError(`${name} must be one of ${rule.choices.join(', ')}`);
      return value;
    case 'string':
    case 'text':
      if (typeof value !== 'string' || (rule.kind === 'string' && !value) || LINE_BREAK_OR_NUL.test(value)) {
        throw new TypeError(`${name} must be a${rule.kind === 'string' ? ' non-empty' : ''} string without CR, LF or NUL`);
      }
      return value;
    case 'path': {
      const path = String(value);
      if (!path) throw new TypeError(`${name} must be a non-empty path`);
      return path;
    }
    case 'headers':
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new TypeError(`${name} must be an object of header names to strings`);
      }
      for (const [key, text] of Object.entries(value)) {
        if (!HEADER_NAME.test(key)) throw new TypeError(`${name}: ${JSON.stringify(key)} is not a valid header name`);
        if (typeof text !== 'string' || LINE_BREAK_OR_NUL.test(text)) {
          throw new TypeError(`${name}: the value of header ${JSON.stringify(key)} must be a string without CR, LF or NUL`);
        }
      }
      return { ...value };
    case 'credentials':
      if (typeof value?.user !== 'string' || typeof value?.password !== 'string') {
        throw new TypeError(`${name} must be { user, password } strings`);
      }
      return { user: value.user, password: value.password };
    default:
      throw new Error(`no check for ${rule.kind}`);
  }
}

function wireValue(params, path) {
  return path.startsWith('output.') ? params.output?.[path.slice('output.'.length)] : params[path];
}

const isSet = (params, path) => {
  const value = wireValue(params, path);
  return value !== undefined && value !== null && value !== false;
};

/** The option a wire path stands for (`output.` for the output object's): the same names here. */
const optionName = (path) => path.replace(/^output\./, '');

/** A choice's value, or what it is when absent (the schema's default). */
const choice = (params, path) => wireValue(params, path) ?? CHOICE_DEFAULTS[path];

/** Fills in what the schema's `x-client-defaults` give, in order, each only when not given. */
function applyDefaults(params) {
  for (const { set, to, when, whenAny = [], whenDecoded } of CLIENT_DEFAULTS) {
    if (wireValue(params, set) != null) continue;
    if ((when && isSet(params, when)) || whenAny.some((path) => isSet(params, path))
      || (whenDecoded && DECODED.includes(choice(params, 'output.format')))) {
      if (set.startsWith('output.')) (params.output ??= {})[set.slice('output.'.length)] = to;
      else params[set] = to;
    }
  }
}

/** Throws a TypeError for the first of the schema's rules between options that `params` break. */
function checkRelations(params) {
  const format = choice(params, 'output.format');
  for (const rule of RELATIONS) {
    if ('exclusive' in rule) {
      const [a, b] = rule.exclusive;
      if (isSet(params, a) && isSet(params, b)) {
        throw new TypeError(`${optionName(a)} and ${optionName(b)} exclude each other${rule.why ? `: ${rule.why}` : ''}`);
      }
    } else if ('with' in rule) {
      if (!isSet(params, rule.option) || rule.with.some((path) => isSet(params, path))) continue;
      const others = rule.with.map(optionName).join(' or ');
      if (rule.equals === undefined) throw new TypeError(`${optionName(rule.option)} goes with ${others}`);
      if (wireValue(params, rule.option) === rule.equals) {
        throw new TypeError(`${optionName(rule.option)} '${rule.equals}' needs ${others}`);
      }
    } else if ('when' in rule) {
      if (isSet(params, rule.option) && !rule.in.includes(choice(params, rule.when))) {
        throw new TypeError(`${optionName(rule.option)} goes with ${optionName(rule.when)} ${rule.in.map((v) => `'${v}'`).join(' or ')}`);
      }
    } else if (isSet(params, rule.option)) {
      if (rule.formats && !rule.formats.includes(format) && rule.equals !== undefined) {
        if (wireValue(params, rule.option) === rule.equals) {
          throw new TypeError(`${optionName(rule.option)} '${rule.equals}' goes with format ${rule.formats.map((f) => `'${f}'`).join(' or ')}`);
        }
      } else if (rule.formats && !rule.formats.includes(format)) {
        throw new TypeError(`${optionName(rule.option)} goes with format ${rule.formats.map((f) => `'${f}'`).join(' or ')}`);
      }
      if (rule.decoded && !DECODED.includes(format)) {
        throw new TypeError(`${optionName(rule.option)} needs a decoded format (${DECODED.join(', ')})`);
      }
    }
  }
}

/** The `download` params for `url` and the client's options (see README.md). */
export function downloadParams(url, token, options = {}) {
  const params = { url, token };
  const output = {};
  for (const [name, value] of Object.entries(options)) {
    const rule = DOWNLOAD_OPTIONS[name];
    if (rule === undefined) {
      if (CLIENT_ONLY.has(name)) continue;
      throw new TypeError(`unknown download option ${JSON.stringify(name)}`);
    }
    if (value === undefined || value === null) continue;
    (rule.output ? output : params)[rule.wire] = checked(name, value, rule);
  }
  if (output.delivery) {
    if (output.dir != null || output.path != null) throw new TypeError('inline delivers the bytes in the event: no dir or path with it');
    output.delivery = 'inline';
  } else if (output.delivery === false) {
    delete output.delivery;
  }
  for (const flag of ['progressive', 'quiet']) if (params[flag] === false) delete params[flag];
  if (Object.keys(output).length) params.output = output;
  // What is not given: progressive means PNG; dir or path a file; a decoded image with no file
  // asked for comes through shared memory (a Buffer in `image.data`), or inline when small.
  applyDefaults(params);
  checkRelations(params);
  return params;
}
