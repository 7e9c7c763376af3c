// The few Node declarations index.d.ts uses, for type-checking on machines without @types/node
// (Debian ships tsc but not @types/node). With @types/node installed, use that instead.
declare module 'node:events' {
  export class EventEmitter {
    on(event: string | symbol, listener: (...args: any[]) => void): this;
    once(event: string | symbol, listener: (...args: any[]) => void): this;
    off(event: string | symbol, listener: (...args: any[]) => void): this;
    emit(event: string | symbol, ...args: any[]): boolean;
    listenerCount(event: string | symbol): number;
  }
}
interface Buffer extends Uint8Array {
  toString(encoding?: string): string;
}
declare namespace NodeJS {
  type Signals = 'SIGTERM' | 'SIGINT' | 'SIGKILL' | 'SIGHUP' | 'SIGQUIT';
  interface ProcessEnv { [key: string]: string | undefined }
}
declare const console: { log(...args: unknown[]): void };
interface AbortSignal {
  readonly aborted: boolean;
}
