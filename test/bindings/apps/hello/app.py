# The same two charts as app.ts, as a cdk8s Python app writes them. With the argument `bad` the first chart
# gets a name with a space, which the library refuses (a RuntimeError from the jsii kernel).
import sys

from cdk8s import App
from cdk8s_bindings_hello import Audience, Greeting, HelloChart

bad = "bad" in sys.argv[1:]
app = App()
HelloChart(
    app,
    "hello",
    name="a b" if bad else "hello-world",
    greeting=Greeting.HOWDY,
    audience=Audience.team("platform"),
    replicas=2,
)
HelloChart(app, "defaults", name="plain")
app.synth()
