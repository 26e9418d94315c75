package RRL::Upstream;

# A small HTTP upstream for end-to-end tests of settle= (issue 17): a Perl
# server on a free loopback port, one process a connection, that answers
# every request with 200 and the header X-Usage-Total-Tokens taken from
# the query string. Parameters of the request's query:
#   usage=N    the header's value, as given (none when absent);
#   delay=S    seconds (a fraction allowed) to wait before answering;
#   hang=1     send the header and 4000 bytes of a long body (more than
#              nginx's postpone_output), then wait until the peer closes
#              (at most 10 s): a response that never ends.
#
#   my $u = RRL::Upstream->start($t);    # stopped with $t's cleanups
#   "proxy_pass http://127.0.0.1:" . $u->port . "/;"

use strict;
use warnings;

use Carp qw(croak);
use IO::Select;
use IO::Socket::INET;
use POSIX ();
use Time::HiRes qw(time sleep);

use RRL::Test;

sub start {
    my ($class, $t) = @_;

    my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
        Proto => 'tcp', Listen => 128, ReuseAddr => 1)
        or croak "upstream: cannot listen: $!";
    my $port = $l->sockport;

    my $pid = fork // croak "fork: $!";
    if ($pid == 0) {
        setpgrp(0, 0);    # its connections' processes stopped with it
        $SIG{CHLD} = 'IGNORE';
        while (1) {
            my $c = $l->accept or next;
            my $child = fork;
            if (defined $child && $child == 0) {
                serve($c);
                POSIX::_exit(0);
            }
            close $c;
        }
    }
    close $l;

    my $self = bless { port => $port, pid => $pid, owner => $$ }, $class;
    $t->add_cleanup(sub { $self->stop });
    return $self;
}

sub port { $_[0]{port} }

sub stop {
    my ($self) = @_;
    return unless $self->{pid} && $self->{owner} == $$;
    kill 'KILL', -$self->{pid};
    waitpid($self->{pid}, 0);
    $self->{pid} = undef;
}

sub serve {
    my ($c) = @_;
    binmode $c;
    my $req = '';
    while ($req !~ /\r\n\r\n/) {
        my $n = sysread($c, $req, 4096, length $req);
        return unless $n;
    }
    my ($query) = $req =~ m{^\S+ [^?\s]*\?(\S*)};
    my %q = map { /^([^=]*)=?(.*)$/ ? ($1, $2) : () } split /&/, $query // '';

    sleep $q{delay} if $q{delay};

    my $head = "HTTP/1.1 200 OK\r\n"
        . (defined $q{usage} ? "X-Usage-Total-Tokens: $q{usage}\r\n" : '')
        . "Content-Type: text/plain\r\nConnection: close\r\n";

    if ($q{hang}) {
        syswrite($c, $head . "Content-Length: 1000000\r\n\r\n" . ('x' x 4000));
        my $sel = IO::Select->new($c);
        my $end = time + 10;
        while (time < $end) {
            next unless $sel->can_read($end - time);
            last unless sysread($c, my $buf, 4096);
        }
    } else {
        syswrite($c, $head . "Content-Length: 3\r\n\r\nOK\n");
    }
    close $c;
}

1;
