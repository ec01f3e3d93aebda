// Command ducc is the one binary of ducc: the node agent (`ducc agent`),
// the process shim (`ducc shim`) and the user and admin commands.
package main
