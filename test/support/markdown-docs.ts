// The documentation as tests read it: Markdown parsed with markdown-it (the parser is kept, not a
// regular expression), TypeScript blocks compiled against the package's public entry point as a
// consumer imports it, and relative links and #anchors checked against the files and the heading
// slugs GitHub computes (github-slugger).
import * as fs from 'node:fs';
import * as path from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt from 'markdown-it';
import * as ts from 'typescript';

export const REPO_ROOT = path.resolve(__dirname, '../..');

/** The name a consumer imports, and the source file it stands for here. */
export const PACKAGE_NAME = 'cdk8s-sidecar-injector';
export const PACKAGE_ENTRY = path.join(REPO_ROOT, 'charts', 'index.ts');

/** The info-string flag of a ```ts block that is deliberately not a whole module (keep these rare). */
export const FRAGMENT_FLAG = 'fragment';

/** A Markdown file, by its path relative to the repository root. */
export interface MarkdownDocument {
  readonly file: string;
  readonly text: string;
}

/** A ```ts block: where it starts (1-based line of its first code line) and its code. */
export interface CodeBlock {
  readonly file: string;
  readonly line: number;
  readonly code: string;
  readonly fragment: boolean;
}

/** A link or image target found in a document, with the 1-based line it is on. */
export interface LinkReference {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

const markdown = new MarkdownIt({ html: true });

type Token = ReturnType<typeof markdown.parse>[number];

function parse(document: MarkdownDocument): Token[] {
  return markdown.parse(document.text, {});
}

/** README.md, CONTRIBUTING.md, CHANGELOG.md, examples/README.md and every Markdown file under docs/, as the repository has them. */
export function repositoryDocuments(root = REPO_ROOT): MarkdownDocument[] {
  const files = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'examples/README.md'].filter((file) => fs.existsSync(path.join(root, file)));
  const docsDir = path.join(root, 'docs');
  if (fs.existsSync(docsDir)) {
    for (const entry of fs.readdirSync(docsDir, { recursive: true, encoding: 'utf8' }).sort()) {
      // docs/api/ is typedoc's output (npm run docs), checked against the sources by api-reference.test.ts.
      if (entry.endsWith('.md') && !entry.split(path.sep).join('/').startsWith('api/')) files.push(path.posix.join('docs', entry.split(path.sep).join('/')));
    }
  }
  return files.map((file) => ({ file, text: fs.readFileSync(path.join(root, file), 'utf8') }));
}

/** Every fenced block whose language is `language` (python, java, go). */
export function languageBlocks(document: MarkdownDocument, language: string): CodeBlock[] {
  return parse(document)
    .filter((token) => token.type === 'fence' && token.map && token.info.trim().split(/\s+/)[0] === language)
    .map((token) => ({ file: document.file, line: token.map![0] + 2, code: token.content, fragment: false }));
}

/** Every fenced python block. */
export function pythonBlocks(document: MarkdownDocument): CodeBlock[] {
  return languageBlocks(document, 'python');
}

/** Every fenced block whose language is ts or typescript. */
export function typescriptBlocks(document: MarkdownDocument): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  for (const token of parse(document)) {
    if (token.type !== 'fence' || !token.map) continue;
    const [language, ...flags] = token.info.trim().split(/\s+/);
    if (language !== 'ts' && language !== 'typescript') continue;
    // map[0] is the fence line (0-based), so the first code line is map[0] + 2 counted from 1.
    blocks.push({ file: document.file, line: token.map[0] + 2, code: token.content, fragment: flags.includes(FRAGMENT_FLAG) });
  }
  return blocks;
}

/** The text GitHub makes a heading's anchor from: its inline content without the markup. */
function headingText(inline: Token): string {
  return (inline.children ?? [])
    .filter((child) => child.type === 'text' || child.type === 'code_inline' || child.type === 'image')
    .map((child) => child.content)
    .join('');
}

/** The anchors of a document's headings, as GitHub computes them (duplicates get -1, -2, ...). */
export function headingAnchors(document: MarkdownDocument): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  const tokens = parse(document);
  tokens.forEach((token, index) => {
    if (token.type === 'heading_open') anchors.add(slugger.slug(headingText(tokens[index + 1])));
  });
  return anchors;
}

/** Every link and image target in a document, with its line. */
export function linkReferences(document: MarkdownDocument): LinkReference[] {
  const references: LinkReference[] = [];
  // A table cell's inline token has no line map of its own: it is on the line of its row.
  let blockLine = 1;
  for (const token of parse(document)) {
    if (token.map) blockLine = token.map[0] + 1;
    if (token.type !== 'inline') continue;
    let line = blockLine;
    for (const child of token.children ?? []) {
      if (child.type === 'softbreak' || child.type === 'hardbreak') line += 1;
      const target = child.type === 'link_open' ? child.attrGet('href') : child.type === 'image' ? child.attrGet('src') : null;
      if (target !== null) references.push({ file: document.file, line, target: String(target) });
    }
  }
  return references;
}

/** Whether a link leaves the repository (a URL with a scheme, or protocol-relative). */
function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');
}

/**
 * The relative links and #anchors of `documents` that do not resolve, one message each
 * (`README.md:12: link "docs/x.md" points to a file that does not exist`). A file is looked up with
 * `exists` (relative to the repository root); an anchor into a Markdown file must be one of its headings.
 */
export function danglingLinks(documents: readonly MarkdownDocument[], read: (file: string) => string | undefined, exists: (file: string) => boolean): string[] {
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (file: string): Set<string> | undefined => {
    if (!anchorsOf.has(file)) {
      const text = documents.find((document) => document.file === file)?.text ?? read(file);
      if (text === undefined) return undefined;
      anchorsOf.set(file, headingAnchors({ file, text }));
    }
    return anchorsOf.get(file);
  };
  const problems: string[] = [];
  for (const document of documents) {
    for (const reference of linkReferences(document)) {
      if (isExternal(reference.target)) continue;
      const hash = reference.target.indexOf('#');
      const pathPart = decodeURIComponent(hash === -1 ? reference.target : reference.target.slice(0, hash));
      const anchor = hash === -1 ? undefined : decodeURIComponent(reference.target.slice(hash + 1));
      const where = `${reference.file}:${reference.line}: link "${reference.target}"`;
      const file =
        pathPart === ''
          ? reference.file
          : path.posix.normalize(pathPart.startsWith('/') ? pathPart.slice(1) : path.posix.join(path.posix.dirname(reference.file), pathPart));
      if (file.startsWith('../')) {
        problems.push(`${where} points outside the repository`);
        continue;
      }
      if (pathPart !== '' && !exists(file)) {
        problems.push(`${where} points to ${file}, which does not exist`);
        continue;
      }
      if (anchor === undefined || !file.endsWith('.md')) continue;
      if (!anchors(file)?.has(anchor)) problems.push(`${where} points to #${anchor}, which is no heading of ${file}`);
    }
  }
  return problems;
}

/** Reads and checks files relative to the repository root. */
export const repositoryFiles = {
  read: (file: string): string | undefined => (fs.existsSync(path.join(REPO_ROOT, file)) ? fs.readFileSync(path.join(REPO_ROOT, file), 'utf8') : undefined),
  exists: (file: string): boolean => fs.existsSync(path.join(REPO_ROOT, file)),
};

/** The options an example is compiled with: strict, as `cdk8s init typescript-app`'s tsconfig is. */
const EXAMPLE_OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  lib: ['lib.es2022.d.ts'],
  types: ['node'],
  strict: true,
  esModuleInterop: true,
  skipLibCheck: true,
  resolveJsonModule: true,
  noEmit: true,
};

/**
 * Compiles every block that is not a fragment, each as a module of its own, in one program in which
 * `cdk8s-sidecar-injector` resolves to charts/index.ts. Returns one message per diagnostic, at the
 * block's line in its Markdown file (`docs/x.md:41:7: error TS2339: ...`).
 */
export function exampleDiagnostics(blocks: readonly CodeBlock[]): string[] {
  const compiled = blocks.filter((block) => !block.fragment);
  // A block without import or export would be a script sharing one global scope with the others.
  const virtualFiles = new Map(compiled.map((block, index) => [path.join(REPO_ROOT, `__doc_example_${index}.ts`), { block, text: `${block.code}\nexport {};\n` }]));
  const host = ts.createCompilerHost(EXAMPLE_OPTIONS, true);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (file) => virtualFiles.has(path.resolve(file)) || ts.sys.fileExists(file);
  host.readFile = (file) => virtualFiles.get(path.resolve(file))?.text ?? readFile(file);
  host.getSourceFile = (file, languageVersion, onError, shouldCreate) => {
    const virtual = virtualFiles.get(path.resolve(file));
    return virtual ? ts.createSourceFile(file, virtual.text, languageVersion, true) : getSourceFile(file, languageVersion, onError, shouldCreate);
  };
  host.resolveModuleNameLiterals = (literals, containingFile, _redirected, options) =>
    literals.map((literal) =>
      literal.text === PACKAGE_NAME
        ? { resolvedModule: { resolvedFileName: PACKAGE_ENTRY, extension: ts.Extension.Ts, isExternalLibraryImport: false } }
        : ts.resolveModuleName(literal.text, containingFile, options, host),
    );
  const program = ts.createProgram([...virtualFiles.keys()], EXAMPLE_OPTIONS, host);
  const messages = ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const virtual = diagnostic.file && virtualFiles.get(path.resolve(diagnostic.file.fileName));
    if (!diagnostic.file || diagnostic.start === undefined) return `error TS${diagnostic.code}: ${text}`;
    const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    if (!virtual) return `${path.relative(REPO_ROOT, diagnostic.file.fileName)}:${line + 1}:${character + 1}: error TS${diagnostic.code}: ${text}`;
    return `${virtual.block.file}:${virtual.block.line + line}:${character + 1}: error TS${diagnostic.code}: ${text}`;
  });
  return [...new Set(messages)];
}
