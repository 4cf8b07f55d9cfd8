// The same two charts as app.ts, as a cdk8s Go app writes them. With the argument `bad` the first chart
// gets a name with a space, which the library refuses (a panic from the jsii runtime).
package main

import (
	"os"
	"slices"

	"github.com/aws/jsii-runtime-go"
	"github.com/cdk8s-team/cdk8s-core-go/cdk8s/v2"
	"github.com/cdk8s-sidecar-injector/cdk8s-bindings-hello-go/hello"
)

func main() {
	defer jsii.Close()
	name := "hello-world"
	if slices.Contains(os.Args[1:], "bad") {
		name = "a b"
	}
	app := cdk8s.NewApp(nil)
	hello.NewHelloChart(app, jsii.String("hello"), &hello.HelloChartProps{
		Name:     jsii.String(name),
		Greeting: hello.Greeting_HOWDY,
		Audience: hello.Audience_Team(jsii.String("platform")),
		Replicas: jsii.Number(2),
	})
	hello.NewHelloChart(app, jsii.String("defaults"), &hello.HelloChartProps{Name: jsii.String("plain")})
	app.Synth()
}
