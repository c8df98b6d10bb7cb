// Package natswire is the little of the NATS client protocol idemlab's
// processes need to drive JetStream: connect, publish with headers,
// request and reply, a pull consumer's next message and its acks.
//
// It is written against the protocol, not linked from nats.go, because
// every package linked into the idemlab binary runs its init in every
// worker the harness starts, and this one adds none beyond the standard
// library the binary already holds. It keeps one connection, one
// request at a time and no goroutine: a request writes, then reads the
// socket until its reply comes, answering the server's PINGs on the way.
package natswire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Msg is one message the server sent.
type Msg struct {
	Subject string
	Reply   string
	// Status and Description are a status message's ("404 No Messages");
	// Status is 0 for an ordinary message.
	Status      int
	Description string
	Header      map[string]string
	Data        []byte
	// sid is the subscription the message came on.
	sid string
}

// Conn is one client connection.
type Conn struct {
	nc    net.Conn
	r     *bufio.Reader
	w     *bufio.Writer
	inbox string
	next  int
	// sids counts subscriptions; 1 is the inbox's.
	sids int
	// Version is the server's, from its INFO line.
	Version string
}

// ErrTimeout is a request whose reply did not come in time.
var ErrTimeout = errors.New("nats: no reply in time")

// Dial connects to a nats:// URL (or host:port) and completes the
// handshake: INFO, CONNECT with headers on, PING, PONG.
func Dial(addr string, timeout time.Duration) (*Conn, error) {
	hostport := addr
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		hostport = u.Host
	}
	nc, err := net.DialTimeout("tcp", hostport, timeout)
	if err != nil {
		return nil, fmt.Errorf("nats: dial %s: %w", hostport, err)
	}
	c := &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriter(nc)}
	c.inbox = fmt.Sprintf("_INBOX.%d%d", os.Getpid(), time.Now().UnixNano())
	if err := c.handshake(timeout); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func (c *Conn) handshake(timeout time.Duration) error {
	c.nc.SetDeadline(time.Now().Add(timeout))
	defer c.nc.SetDeadline(time.Time{})
	line, err := c.line()
	if err != nil {
		return fmt.Errorf("nats: read INFO: %w", err)
	}
	info, ok := strings.CutPrefix(line, "INFO ")
	if !ok {
		return fmt.Errorf("nats: the server opened with %q, not INFO", line)
	}
	var in struct {
		Version string `json:"version"`
		Headers bool   `json:"headers"`
	}
	if err := json.Unmarshal([]byte(info), &in); err != nil {
		return fmt.Errorf("nats: INFO: %w", err)
	}
	if !in.Headers {
		return errors.New("nats: the server does not support headers, which JetStream's Nats-Msg-Id needs")
	}
	c.Version = in.Version
	fmt.Fprintf(c.w, "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,\"protocol\":1,\"name\":\"idemlab\",\"lang\":\"go-idemlab\"}\r\nPING\r\nSUB %s.* 1\r\n", c.inbox)
	if err := c.w.Flush(); err != nil {
		return err
	}
	for {
		line, err := c.line()
		if err != nil {
			return fmt.Errorf("nats: wait for PONG: %w", err)
		}
		switch {
		case line == "PONG":
			return nil
		case strings.HasPrefix(line, "-ERR"):
			return fmt.Errorf("nats: connect: %s", line)
		}
	}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// line reads one protocol line without its CRLF.
func (c *Conn) line() (string, error) {
	s, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// Publish sends a message; header may be nil.
func (c *Conn) Publish(subject, reply string, header map[string]string, data []byte) error {
	return c.publish(subject, reply, header, data)
}

func (c *Conn) publish(subject, reply string, header map[string]string, data []byte) error {
	if len(header) == 0 {
		fmt.Fprintf(c.w, "PUB %s %s%d\r\n", subject, replyArg(reply), len(data))
	} else {
		var h bytes.Buffer
		h.WriteString("NATS/1.0\r\n")
		for _, k := range sortedKeys(header) {
			fmt.Fprintf(&h, "%s: %s\r\n", k, header[k])
		}
		h.WriteString("\r\n")
		fmt.Fprintf(c.w, "HPUB %s %s%d %d\r\n", subject, replyArg(reply), h.Len(), h.Len()+len(data))
		c.w.Write(h.Bytes())
	}
	c.w.Write(data)
	c.w.WriteString("\r\n")
	return c.w.Flush()
}

func replyArg(reply string) string {
	if reply == "" {
		return ""
	}
	return reply + " "
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Request publishes with a fresh reply subject and waits up to timeout
// for the first message on it.
func (c *Conn) Request(subject string, header map[string]string, data []byte, timeout time.Duration) (*Msg, error) {
	c.next++
	reply := c.inbox + "." + strconv.Itoa(c.next)
	if err := c.publish(subject, reply, header, data); err != nil {
		return nil, err
	}
	return c.wait(func(m *Msg) bool { return m.Subject == reply }, timeout)
}

// RequestOwn is Request on a subscription of its own, for requests whose
// answer keeps its own subject, as a pull consumer's message does: the
// answer is whatever arrives on that subscription.
func (c *Conn) RequestOwn(subject string, data []byte, timeout time.Duration) (*Msg, error) {
	c.next++
	c.sids++
	reply, sid := c.inbox+".own."+strconv.Itoa(c.next), strconv.Itoa(c.sids+1)
	fmt.Fprintf(c.w, "SUB %s %s\r\n", reply, sid)
	if err := c.publish(subject, reply, nil, data); err != nil {
		return nil, err
	}
	m, err := c.wait(func(m *Msg) bool { return m.sid == sid }, timeout)
	fmt.Fprintf(c.w, "UNSUB %s\r\n", sid)
	if ferr := c.w.Flush(); err == nil {
		err = ferr
	}
	return m, err
}

// wait reads until a message that match accepts arrives, answering PINGs;
// others (answers to earlier requests) are dropped.
func (c *Conn) wait(match func(*Msg) bool, timeout time.Duration) (*Msg, error) {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	defer c.nc.SetReadDeadline(time.Time{})
	for {
		line, err := c.line()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, ErrTimeout
		}
		if err != nil {
			return nil, fmt.Errorf("nats: read: %w", err)
		}
		op, rest, _ := strings.Cut(line, " ")
		switch op {
		case "PING":
			c.w.WriteString("PONG\r\n")
			if err := c.w.Flush(); err != nil {
				return nil, err
			}
		case "-ERR":
			return nil, fmt.Errorf("nats: server error %s", rest)
		case "MSG", "HMSG":
			m, err := c.message(op == "HMSG", strings.Fields(rest))
			if err != nil {
				return nil, err
			}
			if match(m) {
				return m, nil
			}
		}
	}
}

// message reads a MSG or HMSG body after its control line's arguments:
// subject sid [reply] [hdr_len] total_len.
func (c *Conn) message(headers bool, args []string) (*Msg, error) {
	need := 3
	if headers {
		need = 4
	}
	if len(args) != need && len(args) != need+1 {
		return nil, fmt.Errorf("nats: bad message line %q", args)
	}
	m := &Msg{Subject: args[0], sid: args[1]}
	if len(args) == need+1 {
		m.Reply = args[2]
	}
	total, err := strconv.Atoi(args[len(args)-1])
	if err != nil {
		return nil, fmt.Errorf("nats: bad size in %q", args)
	}
	hlen := 0
	if headers {
		if hlen, err = strconv.Atoi(args[len(args)-2]); err != nil || hlen > total {
			return nil, fmt.Errorf("nats: bad header size in %q", args)
		}
	}
	body := make([]byte, total+2)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, fmt.Errorf("nats: read message: %w", err)
	}
	m.Data = body[hlen:total]
	if headers {
		if err := m.parseHeader(string(body[:hlen])); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// parseHeader reads "NATS/1.0[ status description]" and its lines.
func (m *Msg) parseHeader(h string) error {
	lines := strings.Split(strings.TrimRight(h, "\r\n"), "\r\n")
	first, ok := strings.CutPrefix(lines[0], "NATS/1.0")
	if !ok {
		return fmt.Errorf("nats: header starts %q", lines[0])
	}
	if first = strings.TrimSpace(first); first != "" {
		code, desc, _ := strings.Cut(first, " ")
		n, err := strconv.Atoi(code)
		if err != nil {
			return fmt.Errorf("nats: bad status %q", first)
		}
		m.Status, m.Description = n, desc
	}
	m.Header = map[string]string{}
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m.Header[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return nil
}
