// Command controlplane is one binary for the four upstream control-plane processes gen's
// judge runs: embedded etcd, kube-apiserver, kube-controller-manager and kube-scheduler, all
// from k8s.io/kubernetes at the version pinned in go.mod. The first argument picks the
// component; the rest are that component's own flags. Each runs as its own process so that
// their feature gates and component registries stay apart.
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "time/tzdata"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: controlplane etcd|kube-apiserver|kube-controller-manager|kube-scheduler [flags]")
		os.Exit(2)
	}
	component := os.Args[1]
	os.Args = append([]string{component}, os.Args[2:]...)
	switch component {
	case "etcd":
		os.Exit(runEtcd(os.Args[1:]))
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	}
	fmt.Fprintf(os.Stderr, "unknown component %q\n", component)
	os.Exit(2)
}

// runEtcd starts a single-member etcd on loopback, without fsync (test data only), and serves
// until it fails or receives SIGTERM/SIGINT.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "data directory")
	clientURL := fs.String("listen-client-url", "http://127.0.0.1:2379", "client URL")
	peerURL := fs.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	client, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "warn"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer e.Close()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintln(os.Stderr, "etcd ready")
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, err)
		return 1
	case <-stop:
		return 0
	}
}
