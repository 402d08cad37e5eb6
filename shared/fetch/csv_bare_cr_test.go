package fetch

import (
	"encoding/json"
	"testing"
)

// A CSV body with bare CR line breaks (classic Mac, not RFC 4180: TEXTDATA
// excludes CR) is returned as a success with no rows: encoding/csv keeps a
// lone CR inside unquoted fields, so the whole body becomes one header row
// whose names are "name\r1", "x\r2". Either it is refused as not RFC 4180
// (TOOL_PERMANENT_FAILURE, like other unparsable bodies) or it yields its
// two data rows; a silent [] loses the data.
func TestCSVWithBareCRIsNotSilentlyEmpty(t *testing.T) {
	out, err, _ := fetchOnce(t, textHandler("text/csv", "id,name\r1,x\r2,y\r"), Input{Accept: "csv"}, nil)
	if err != nil {
		return // refused: fine
	}
	var rows []map[string]string
	if e := json.Unmarshal(out.Data, &rows); e != nil {
		t.Fatal(e)
	}
	if len(rows) != 2 {
		t.Fatalf("CSV with CR line breaks: success with data %s (%d rows), want 2 rows or TOOL_PERMANENT_FAILURE", out.Data, len(rows))
	}
}
