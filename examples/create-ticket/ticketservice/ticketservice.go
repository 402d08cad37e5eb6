// Package ticketservice is a tiny in-memory ticket service for the
// create-ticket example and its tests: POST /tickets with a JSON ticket
// and an Idempotency-Key header creates one ticket per key (201, then 200
// with the same ticket for the same key); GET /tickets lists them.
//
// Tests steer it in-process: FailNext and LoseNextAnswer make the next
// POSTs fail (the latter after storing the ticket, as a lost answer), and
// Requests counts every request that reached it, so a test can show that
// a refused call never did.
package ticketservice

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
)

// Ticket is one stored ticket.
type Ticket struct {
	ID       string `json:"id"`
	Key      string `json:"idempotency_key"`
	Title    string `json:"title"`
	Body     string `json:"body,omitempty"`
	Priority string `json:"priority,omitempty"`
}

// Service is the ticket service's http.Handler.
type Service struct {
	mu      sync.Mutex
	tickets []Ticket
	byKey   map[string]int
	fail    []int // statuses the next requests answer, first first
	lose    int   // the next requests that store their ticket and answer 503
	// requests counts every request served, of any method and path.
	requests atomic.Int64
}

// New returns an empty service.
func New() *Service { return &Service{byKey: map[string]int{}} }

// FailNext makes the next len(statuses) POSTs answer these statuses
// without storing anything.
func (s *Service) FailNext(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = append(s.fail, statuses...)
}

// LoseNextAnswer makes the next POST store its ticket and answer 503, as
// if the answer were lost on its way back: a retry under the same key
// must find that ticket.
func (s *Service) LoseNextAnswer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose++
}

// Requests returns how many requests the service has received, of any
// method and path, answered or not.
func (s *Service) Requests() int { return int(s.requests.Load()) }

// Tickets returns the stored tickets in creation order.
func (s *Service) Tickets() []Ticket {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ticket(nil), s.tickets...)
}

// ServeHTTP serves POST and GET /tickets.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.URL.Path != "/tickets" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet {
		json.NewEncoder(w).Encode(s.Tickets())
		return
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fail) > 0 {
		status := s.fail[0]
		s.fail = s.fail[1:]
		w.WriteHeader(status)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	var t Ticket
	if key == "" || json.NewDecoder(r.Body).Decode(&t) != nil || t.Title == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if i, ok := s.byKey[key]; ok {
		json.NewEncoder(w).Encode(s.tickets[i])
		return
	}
	t.ID, t.Key = fmt.Sprintf("T-%d", len(s.tickets)+1), key
	s.byKey[key] = len(s.tickets)
	s.tickets = append(s.tickets, t)
	if s.lose > 0 {
		s.lose--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(t)
}
