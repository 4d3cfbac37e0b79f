package processor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateHasOneWriter reads the package's source: the fences, the
// queue's state (SetState) and its released counter (AddReleased) are
// written in one function, Group.change, and nowhere else (state.go's
// "One writer").
func TestStateHasOneWriter(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{"retry": true, "hold": true, "dead": true, "released": true, "retrySet": true}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				var what string
				switch n := n.(type) {
				case *ast.AssignStmt:
					for _, l := range n.Lhs {
						if w := stateField(l, fields); w != "" {
							what = "writes " + w
						}
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						switch sel.Sel.Name {
						case "SetState", "AddReleased":
							what = "calls " + sel.Sel.Name
						case "Store":
							if w := stateField(sel.X, fields); w != "" {
								what = "stores " + w
							}
						}
					}
				}
				if what == "" {
					return true
				}
				checked++
				if fn.Name.Name != "change" {
					t.Errorf("%s: %s %s; only change may (state.go)", fset.Position(n.Pos()), fn.Name.Name, what)
				}
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("found no write of the state at all: the check reads the wrong files")
	}
}

// stateField names the subState field e writes ("" when none): a selector
// ending in one of fields, or *s.fence(owner).
func stateField(e ast.Expr, fields map[string]bool) string {
	if st, ok := e.(*ast.StarExpr); ok {
		if c, ok := st.X.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "fence" {
				return "a fence"
			}
		}
		e = st.X
	}
	if sel, ok := e.(*ast.SelectorExpr); ok && fields[sel.Sel.Name] {
		return sel.Sel.Name
	}
	return ""
}
