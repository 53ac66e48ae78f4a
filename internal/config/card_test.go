package config

import (
	"strings"
	"testing"
)

func cardVHost(card string) string {
	return "auth: {mode: none}\nvirtual_hosts:\n  demo:\n    card:" + card + "\n    backends: {one: {url: http://h}}\n"
}

func TestCard_SettingsDefaultsAndOptOut(t *testing.T) {
	if c := mustParse(t, cardVHost(" false")).VirtualHosts["demo"].Card; c == nil || !c.Off {
		t.Fatalf("card: false is an opt-out, got %+v", c)
	}
	for _, on := range []string{" true", " null", ""} {
		if c := mustParse(t, cardVHost(on)).VirtualHosts["demo"].Card; c != nil && (c.Off || c.Name != "" || c.Title != "") {
			t.Fatalf("card:%s is the defaults, got %+v", on, c)
		}
	}
	c := mustParse(t, cardVHost(`
      name: com.example/demo
      title: Demo
      description: The demo
      version: 1.0.0-rc.1
      website_url: https://example.com
      icons: [{src: "data:image/png;base64,AA==", mime_type: image/png, sizes: [any], theme: dark}]`)).VirtualHosts["demo"].Card
	if c.Name != "com.example/demo" || c.Version != "1.0.0-rc.1" || len(c.Icons) != 1 || c.Icons[0].Theme != "dark" {
		t.Fatalf("card %+v", c)
	}
}

func TestCard_RejectsWhatTheSchemaWould(t *testing.T) {
	cases := map[string]struct{ card, want string }{
		"name":    {"\n      name: demo", `virtual_hosts.demo.card.name: "demo" is not a server name`},
		"range":   {"\n      version: ^1.2.0", `virtual_hosts.demo.card.version: "^1.2.0" is a version range`},
		"site":    {"\n      website_url: ftp://x", `virtual_hosts.demo.card.website_url: "ftp://x" is not an http(s) URL`},
		"theme":   {"\n      icons: [{src: https://x/i.png, theme: blue}]", `virtual_hosts.demo.card.icons[0].theme: "blue" is not a theme`},
		"src":     {"\n      icons: [{theme: light}]", `virtual_hosts.demo.card.icons[0].src: needs an http(s) or data: URI`},
		"unknown": {"\n      tools: [x]", `virtual_hosts.demo.card.tools: unknown field`},
		"string":  {" yes please", `virtual_hosts.demo.card: must be a mapping`},
		"long":    {"\n      title: " + strings.Repeat("t", 101), `virtual_hosts.demo.card.title: at most 100 bytes`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkErr(t, cardVHost(c.card), c.want) })
	}
}
