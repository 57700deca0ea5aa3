// The globals Crucible's runner adds to Deno's: those of the embedded
// engine, so that a program written for one runs on the other.

/** The sandbox's environment, frozen. */
declare const env: Readonly<Record<string, string>>;

interface CrucibleFileInfo {
  name?: string;
  size: number;
  isFile: boolean;
  isDirectory: boolean;
  isSymlink: boolean;
  mtime: Date | null;
}

/** Files, synchronously: relative paths start at /workspace. */
declare const fs: {
  readTextFile(path: string | URL): string;
  readFile(path: string | URL): Uint8Array;
  writeTextFile(path: string | URL, data: string, options?: { append?: boolean }): void;
  writeFile(path: string | URL, data: Uint8Array | ArrayBuffer | string, options?: { append?: boolean }): void;
  readDir(path?: string | URL): (CrucibleFileInfo & { name: string })[];
  stat(path: string | URL): CrucibleFileInfo;
  exists(path: string | URL): boolean;
  mkdir(path: string | URL, options?: { recursive?: boolean }): void;
  remove(path: string | URL, options?: { recursive?: boolean }): void;
};
