// Each package's Java binding as a cdk8s Java user meets it: a Maven project whose pom lists the built
// repository (file://, with the dependencies Maven Central lacks) beside Maven Central, apps/<pkg>/Main.java
// compiled by Maven and run with java on the classpath Maven resolved.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { hashTree } from './build-bindings';
import {
  AppRun,
  appsDir,
  bindingAppsToTest,
  builtBindings,
  consumerDir,
  describeSynthDifference,
  fileHash,
  findTool,
  mustRun,
  runApp,
  shownError,
  runTypeScriptApp,
} from './support/binding-apps';
import { BindingsManifest, bindingsDirs } from './support/bindings-layout';

const java = findTool([process.env.JAVA, 'java'], ['-version']);
const mvn = findTool([process.env.MVN, 'mvn'], ['-v']);

/** The user's pom: the package and its jsii dependencies at the versions it was built against. */
function pomOf(manifest: BindingsManifest): string {
  const jv = manifest.java!;
  const dependency = (coordinates: string) => {
    const [groupId, artifactId, version] = coordinates.split(':');
    return `    <dependency><groupId>${groupId}</groupId><artifactId>${artifactId}</artifactId><version>${version}</version></dependency>`;
  };
  return `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>${manifest.package.key}-app</artifactId>
  <version>0.0.0</version>
  <properties><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
  <repositories>
${jv.repositories.map((dir, i) => `    <repository><id>bindings-${i}</id><url>file://${dir}</url></repository>`).join('\n')}
  </repositories>
  <dependencies>
${[`${jv.groupId}:${jv.artifactId}:${jv.version}`, ...jv.dependencies].map(dependency).join('\n')}
  </dependencies>
  <build>
    <plugins>
      <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version><configuration><release>17</release></configuration></plugin>
      <plugin><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version></plugin>
    </plugins>
  </build>
</project>
`;
}

/** Our artifacts in the Maven local repository: cleared so that a rebuild at the same version is fetched anew. */
function clearBuiltArtifacts(manifest: BindingsManifest): void {
  for (const repository of manifest.java!.repositories) {
    if (!fs.existsSync(repository)) continue;
    const walk = (relative: string) => {
      for (const entry of fs.readdirSync(path.join(repository, relative), { withFileTypes: true })) {
        if (!entry.isDirectory()) continue;
        const child = path.join(relative, entry.name);
        // An artifact's directory holds its versions' directories and maven-metadata.xml.
        if (fs.existsSync(path.join(repository, child, 'maven-metadata.xml'))) fs.rmSync(path.join(bindingsDirs.mavenLocal, child), { recursive: true, force: true });
        else walk(child);
      }
    };
    walk('');
  }
}

for (const apps of bindingAppsToTest()) {
  const built = builtBindings(apps.key, 'java');
  const skip = !java ? 'java not found (JAVA names another)' : !mvn ? 'mvn not found (MVN names another)' : typeof built === 'string' ? built : undefined;

  describe(`${apps.key} in Java`, { skip }, () => {
    const manifest = built as BindingsManifest;
    let classpath: string;
    let reference: AppRun;

    before(() => {
      const main = path.join(appsDir(apps.key), 'Main.java');
      const inputs = { repositories: manifest.java!.repositories.map((dir) => hashTree(dir, [])), main: fileHash(main), pom: pomOf(manifest) };
      const project = consumerDir(`java-${apps.key}`, inputs, (dir) => {
        fs.writeFileSync(path.join(dir, 'pom.xml'), pomOf(manifest));
        fs.mkdirSync(path.join(dir, 'src/main/java'), { recursive: true });
        fs.copyFileSync(main, path.join(dir, 'src/main/java/Main.java'));
        clearBuiltArtifacts(manifest);
        mustRun(mvn!, ['-B', '-q', `-Dmaven.repo.local=${bindingsDirs.mavenLocal}`, 'compile', 'dependency:build-classpath', '-Dmdep.outputFile=classpath.txt'], dir);
      });
      classpath = `${path.join(project, 'target/classes')}${path.delimiter}${fs.readFileSync(path.join(project, 'classpath.txt'), 'utf8').trim()}`;
      reference = runTypeScriptApp(manifest);
      assert.equal(reference.status, 0, `the TypeScript app failed:\n${reference.stderr}`);
    });

    it('synthesizes the same YAML as the TypeScript app', () => {
      const run = runApp(java!, ['-cp', classpath, 'Main'], appsDir(apps.key));
      assert.equal(run.status, 0, `Main.java exited with ${run.status}:\n${run.stderr}`);
      assert.ok(Object.keys(run.synthesized).length > 0, 'Main.java synthesized nothing');
      assert.deepEqual(run.synthesized, reference.synthesized, describeSynthDifference('Main.java', run.synthesized, reference.synthesized));
    });

    it('tells the user which prop is wrong and why, in a JsiiError', (t) => {
      const run = runApp(java!, ['-cp', classpath, 'Main', ...apps.badPropsArgs], appsDir(apps.key));
      const thrown = run.stderr.split('\n').find((line) => line.startsWith('Exception in thread')) ?? '';
      const shown = shownError(run.stderr, 'software.amazon.jsii.JsiiError: ', apps.badPropsMessage);
      t.diagnostic(`java shows: ${thrown}${shown?.includes('\n') ? shown.slice(shown.indexOf('\n')) : ''}`);
      assert.notEqual(run.status, 0, 'Main.java with bad props exited 0');
      assert.ok(thrown.startsWith('Exception in thread "main" software.amazon.jsii.JsiiError: '), `the uncaught exception's line; whole stderr:\n${run.stderr}`);
      assert.equal(shown, apps.badPropsMessage, `the exception's message; whole stderr:\n${run.stderr}`);
    });
  });
}
