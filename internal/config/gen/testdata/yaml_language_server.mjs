// Runs yaml-language-server's own validation, completion and hover on
// config files, as an editor would (TestYAMLLanguageServer). Usage:
//   node yaml_language_server.mjs <node_modules> <schema or ""> <file>...
// With a schema, every file is mapped to it (VS Code's yaml.schemas);
// with "" each file must name its schema in a modeline. Prints one JSON
// object: the messages of each file, the keys completed under auth:, and
// the hover text of auth.mode.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';

const [modules, schema, ...files] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(path.join(modules, rel)).href);
const { getLanguageService } = await load('yaml-language-server/out/src/index.js');
const { TextDocument } = await load('vscode-languageserver-textdocument/lib/esm/main.js');

const ls = getLanguageService({
  schemaRequestService: async (uri) => fs.readFileSync(fileURLToPath(uri), 'utf8'),
  workspaceContext: { resolveRelativePath: (rel, resource) => new URL(rel, resource).href },
});
const schemas = schema ? [{ uri: pathToFileURL(schema).href, fileMatch: ['*.yaml', '*.yml'] }] : [];
ls.configure({ validate: true, completion: true, hover: true, schemas });

const doc = (file, text) => TextDocument.create(pathToFileURL(path.resolve(file)).href, 'yaml', 1, text);
const out = { files: {} };
for (const f of files) {
  const diags = await ls.doValidation(doc(f, fs.readFileSync(f, 'utf8')), false);
  out.files[f] = diags.map((d) => `line ${d.range.start.line + 1}: ${d.message}`);
}
if (schema) {
  const probe = doc(path.join(path.dirname(schema), 'probe.yaml'), 'auth:\n  mode: jwt\n  \n');
  const comp = await ls.doComplete(probe, { line: 2, character: 2 }, false);
  out.authCompletion = comp.items.map((i) => i.label);
  const hover = await ls.doHover(probe, { line: 1, character: 3 });
  out.modeHover = hover ? JSON.stringify(hover.contents) : '';
}
console.log(JSON.stringify(out));
