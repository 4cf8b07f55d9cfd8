// The same two charts as app.ts, as a cdk8s Java app writes them. With the argument `bad` the first chart
// gets a name with a space, which the library refuses (a JsiiError, uncaught).
import io.github.cdk8s_sidecar_injector.hello.Audience;
import io.github.cdk8s_sidecar_injector.hello.Greeting;
import io.github.cdk8s_sidecar_injector.hello.HelloChart;
import io.github.cdk8s_sidecar_injector.hello.HelloChartProps;
import java.util.Arrays;
import org.cdk8s.App;

public class Main {
    public static void main(final String[] args) {
        final boolean bad = Arrays.asList(args).contains("bad");
        final App app = new App();
        new HelloChart(app, "hello", HelloChartProps.builder()
                .name(bad ? "a b" : "hello-world")
                .greeting(Greeting.HOWDY)
                .audience(Audience.team("platform"))
                .replicas(2)
                .build());
        new HelloChart(app, "defaults", HelloChartProps.builder().name("plain").build());
        app.synth();
    }
}
