// Image datasets as img2dataset builds them: downloadDataset runs `image-worker get` over a table
// of URLs (and captions) into WebDataset or Parquet shards (GUIDE.md, "Datasets"). The worker reads
// TXT, CSV, TSV, JSONL and Parquet (flat columns, any codec but LZO) tables itself, a row at a time; rows
// given from JavaScript (an array or any iterable, sync or async) are streamed into a temporary
// JSON Lines file first.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findBinary } from './binary.js';
import { ImageWorkerError } from './errors.js';
import { GET_FLAGS } from './option-table.js';

/** What outputFormat may say (loose files with a manifest: downloadMany). */
export const OUTPUT_FORMATS = ['webdataset', 'parquet', 'files'];
/** A shard's name in each layout (what it has beside its _stats.json): an archive, a folder named as the shard, or its Parquet table. */
const SHARD_FILES = { webdataset: '.tar', files: '', parquet: '.parquet' };
export const INPUT_FORMATS = ['txt', 'csv', 'tsv', 'jsonl', 'parquet'];

/** get's flags for the options given: each one of GET_FLAGS (camel case), checked. */
function flagArguments(options) {
  const args = [];
  for (const [name, value] of Object.entries(options)) {
    if (!Object.hasOwn(GET_FLAGS, name)) throw new TypeError(`downloadDataset: unknown option ${name}`);
    const [flag, isSwitch] = GET_FLAGS[name];
    if (value == null || (isSwitch && value === false)) continue;
    if (isSwitch) {
      if (value !== true) throw new TypeError(`downloadDataset: ${name} must be true or false, not ${JSON.stringify(value)}`);
      args.push(flag);
    } else {
      args.push(flag, Array.isArray(value) ? value.join(',') : String(value));
    }
  }
  return args;
}

async function writeRows(rows, path) {
  const out = createWriteStream(path, { encoding: 'utf8' });
  for await (const row of rows) {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      out.destroy();
      await once(out, 'close');
      throw new TypeError(`downloadDataset: a table's rows are objects of column to value, not ${JSON.stringify(row)?.slice(0, 80)}`);
    }
    if (!out.write(JSON.stringify(row) + '\n')) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** The shards' stats in `output`, summed (the complete shards of an earlier run included). */
export function datasetResult(output, outputFormat, exitStatus) {
  const result = { output, shards: [], count: 0, successes: 0, failed: 0, status: {}, errors: {}, exitStatus };
  for (const name of readdirSync(output).filter((n) => /^\d{5,}_stats\.json$/.test(n)).sort()) {
    const stats = JSON.parse(readFileSync(join(output, name), 'utf8'));
    result.count += stats.count ?? 0;
    result.successes += stats.successes ?? 0;
    for (const [key, n] of Object.entries(stats.status_dict ?? {})) result.status[key] = (result.status[key] ?? 0) + n;
    for (const [key, n] of Object.entries(stats.errors ?? {})) result.errors[key] = (result.errors[key] ?? 0) + n;
    result.shards.push(join(output, name.slice(0, -'_stats.json'.length) + SHARD_FILES[outputFormat]));
  }
  result.failed = result.count - result.successes;
  return result;
}

/**
 * Downloads every row of `table` (a TXT/CSV/TSV/JSONL file, or an iterable of row objects) into
 * shards in `output`, as img2dataset lays them out; resolves to the shards' stats summed. Options:
 * inputFormat, urlCol ('url'), captionCol, saveColumns, verifyHashCol, outputFormat
 * ('webdataset'), shardSize (10000), firstShard, resume, binary, progress, signal (an AbortSignal:
 * the worker stops as on Ctrl-C, complete shards kept), and every one of get's options in camel
 * case (width, height, fit, format, concurrency, disallowedHeaderDirectives…).
 */
export async function downloadDataset(table, output, options = {}) {
  const {
    inputFormat, urlCol = 'url', captionCol, saveColumns = [], verifyHashCol, outputFormat = 'webdataset',
    shardSize = 10000, firstShard = 0, resume = false, binary, progress = false, signal, ...rest
  } = options;
  if (!OUTPUT_FORMATS.includes(outputFormat)) throw new TypeError(`downloadDataset: outputFormat must be one of ${OUTPUT_FORMATS.join(', ')}, not ${outputFormat}`);
  if (inputFormat != null && !INPUT_FORMATS.includes(inputFormat)) {
    throw new TypeError(`downloadDataset: inputFormat must be one of ${INPUT_FORMATS.join(', ')}, not ${inputFormat}`);
  }
  const args = ['get', '-o', output, '--output-format', outputFormat, '--shard-size', String(shardSize), '--url-col', urlCol];
  if (firstShard) args.push('--first-shard', String(firstShard));
  if (captionCol) args.push('--caption-col', captionCol);
  if (saveColumns.length) args.push('--save-columns', saveColumns.join(','));
  if (verifyHashCol) args.push('--verify-hash-col', verifyHashCol);
  if (resume) args.push('--continue');
  if (!progress) args.push('--no-progress');
  args.push(...flagArguments(rest));
  if (signal?.aborted) throw signal.reason ?? new ImageWorkerError('downloadDataset: aborted');
  const program = findBinary(binary).path;
  const scratch = mkdtempSync(join(tmpdir(), 'image-worker-dataset-'));
  try {
    let path = table;
    if (typeof table !== 'string') {
      path = join(scratch, 'rows.jsonl');
      await writeRows(table, path);
      args.push('--input-format', 'jsonl');
    } else if (inputFormat) {
      args.push('--input-format', inputFormat);
    }
    args.splice(1, 0, '-i', path);
    const child = spawn(program, args, { stdio: ['ignore', 'ignore', progress ? 'inherit' : 'pipe'] });
    let said = '';
    child.stderr?.setEncoding('utf8').on('data', (text) => { said = (said + text).slice(-4000); });
    const stop = () => child.kill('SIGINT');
    signal?.addEventListener('abort', stop, { once: true });
    const [code, killedBy] = await once(child, 'close');
    signal?.removeEventListener?.('abort', stop);
    if (code === 0 || code === 1) return datasetResult(output, outputFormat, code);
    if (signal?.aborted) throw signal.reason ?? new ImageWorkerError('downloadDataset: aborted');
    throw new ImageWorkerError(`image-worker get failed (${code == null ? `killed by ${killedBy}` : `exit status ${code}`}): ${said.trim()}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
