// Package classfile reads Apache UIMA DUCC's class files (ducc.classes,
// with their node files and User stanzas) into ducc's scheduler
// configuration, so that a DUCC site keeps its classes and nodepools.
//
// A class file is a list of stanzas:
//
//	Nodepool --default-- { nodefile = ducc.nodes; search-order = 100 }
//	Class fair-base { policy = FAIR_SHARE; nodepool = --default--; priority = 10; abstract = true }
//	Class normal fair-base { weight = 100; default = true }
//	User alice { max-allotment = 60 }
//
// A Class may name a parent class whose attributes it inherits; abstract
// classes only serve as parents. A node file lists host names, one or
// more per line, and may `import` another node file. Relative file names
// are resolved against the folder of the file that names them.
//
// Translate returns the equivalent `scheduler:` YAML (what `ducc admin
// import-classes` prints) and the validated head/rm configuration. Every
// attribute ducc cannot honour is named: an error when ignoring it would
// change where work runs, a warning when DUCC itself ignores it or the
// difference is harmless. docs/ducc-compatibility.md lists them.
package classfile
