// The reference: the same two charts as app.py, Main.java and main.go, in TypeScript. With the argument
// `bad` the first chart gets a name with a space, which the library refuses.
import { App } from 'cdk8s';
import { Audience, Greeting, HelloChart } from 'cdk8s-bindings-hello';

const bad = process.argv.slice(2).includes('bad');
const app = new App();
new HelloChart(app, 'hello', {
  name: bad ? 'a b' : 'hello-world',
  greeting: Greeting.HOWDY,
  audience: Audience.team('platform'),
  replicas: 2,
});
new HelloChart(app, 'defaults', { name: 'plain' });
app.synth();
